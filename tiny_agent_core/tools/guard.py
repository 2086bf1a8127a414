"""Workspace containment for the file tools (``read``, ``write``, ``edit``), race-free.

The reference resolves any path anywhere (notes §6.1). Here :meth:`WorkspaceGuard.locate` walks a path one
component at a time from ``/`` with directory file descriptors: each component is opened relative to the one
before (``openat`` via ``os.open(name, flags, dir_fd=...)``) with ``O_PATH | O_NOFOLLOW``, and a symlink is
never followed by the kernel: its target is read from the link's own descriptor and walked the same way, ``..``
goes back to the directory the walk came from. The walk therefore knows the *real* path of every directory it
holds (what ``os.path.realpath`` gives, ``..`` applied after resolution), and that real path of the target is
checked against the allowed roots: ``..``, absolute paths outside the workspace and symlinks whose target leaves
it are refused, symlinks that stay inside are followed. A part that does not exist yet is kept lexically, so a
dangling symlink pointing outside is refused too.

The result, :class:`Located`, holds the target's real parent directory open; the tools open the final name
relative to it with ``O_NOFOLLOW`` (and ``write``/``edit`` create their temporary file and rename it there), so a
process that swaps a directory or the final name for a symlink between the check and the use makes the call fail
instead of reaching outside: the kernel never resolves a name the guard has not checked. What the walk cannot stop
is a directory it already holds being *moved* elsewhere meanwhile; doing that needs write access to the
destination, so it grants nothing the mover did not have. Platforms without ``O_PATH`` (macOS, the BSDs) cannot
read a symlink through a descriptor: there a symlink to a directory on the way is refused (``ELOOP``) rather than
followed. ``bash`` and ``bg`` are not contained by this guard (a shell can name anything): their guards are the
approval policy and, where it can run, the sandbox of :mod:`~tiny_agent_core.tools.sandbox` (read-only system,
writable workspace and allowed roots).

The allowed roots are the workspace plus the roots the caller passes in: widening is an explicit per-workspace
setting (see :class:`~tiny_agent_core.tools.approval.ToolSettings`), never something a model can ask for.

``write`` and ``edit`` locate with ``writable=True``, which also keeps them out of tiny-agent's own state: every
root's ``.tiny-agent`` folder but ``.tiny-agent/skills``, and the app's config and data folders (compared by file
identity as well as by path, so other spellings of those folders are refused too).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from tiny_agent_core.paths import config_dir, data_dir
from tiny_agent_core.tools.base import ToolError

__all__ = ["MAX_SYMLINKS", "Located", "PathOutsideWorkspace", "WorkspaceGuard"]

TINY_AGENT_FOLDER = ".tiny-agent"
SESSIONS_FOLDER = "sessions"
SKILLS_FOLDER = "skills"

MAX_SYMLINKS = 40
"""Symlinks one path may pass through before it is refused with ``ELOOP`` (the kernel's own limit)."""

_O_PATH: int = getattr(os, "O_PATH", os.O_RDONLY)
_WALK_FLAGS = _O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO, where O_PATH is missing
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY

_Identity = tuple[int, int]
"""``(st_dev, st_ino)``."""


class PathOutsideWorkspace(ToolError):
    """A file tool's path resolves outside the workspace and every allowed root."""

    def __init__(self, message: str, *, requested: str, resolved: Path) -> None:
        super().__init__(message)
        self.requested = requested
        self.resolved = resolved


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


def _identity(path: Path) -> _Identity | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino)


def _own_identity(path: Path) -> _Identity | None:
    """The identity of ``path`` itself, ``None`` for a symlink (an exception must not reach what it points to)."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return None
    return None if stat.S_ISLNK(info.st_mode) else (info.st_dev, info.st_ino)


def _chain(path: Path) -> list[tuple[Path, _Identity | None]]:
    """``path`` and its ancestors, deepest first, each with its identity when it exists."""
    return [(place, _identity(place)) for place in (path, *path.parents)]


def _app_folders() -> list[tuple[str, Path]]:
    return [("the tiny-agent configuration folder", config_dir()), ("the tiny-agent data folder", data_dir())]


def _changed(requested: str) -> ToolError:
    return ToolError(f"{requested} changed while it was being opened (a symlink appeared); nothing was done.")


class Located:
    """Where a file tool's path leads: the real parent directory, held open, and the final name in it.

    Made by :meth:`WorkspaceGuard.locate`; close it (it is a context manager). Every use goes through the held
    directory with ``O_NOFOLLOW``, never through a path string.
    """

    def __init__(self, requested: str, given: Path, directory: int, real: Path, missing: list[str], name: str):
        self.requested = requested
        """The path as the model gave it."""
        self.given = given
        """The absolute path the caller asked for, ``..`` applied lexically (symlinks not followed)."""
        self._directory = directory
        self._real_directory = real
        self._missing = missing
        self.name = name
        """The final component inside :attr:`directory`; ``.`` when the target is that directory itself."""

    @property
    def path(self) -> Path:
        """The target's real path (symlinks followed); it may not exist yet."""
        path = self._real_directory.joinpath(*self._missing)
        return path if self.name == "." else path / self.name

    @property
    def redirected(self) -> bool:
        """Whether the real target differs from :attr:`given` (a symlink on the way was followed)."""
        return self.path != self.given

    @property
    def directory(self) -> int:
        """The descriptor of the target's parent directory (``O_PATH`` on Linux); see :meth:`make_parents`."""
        if self._missing:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self.requested)
        return self._directory

    def lstat(self) -> os.stat_result | None:
        """The target's own status (a symlink is not followed), ``None`` when it does not exist."""
        if self._missing:
            return None
        try:
            return os.stat(self.name, dir_fd=self._directory, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open(self, flags: int, mode: int = 0o600, *, name: str | None = None) -> int:
        """``os.open`` of the target (or of ``name`` beside it) in its directory, never following a symlink.

        Errors name the requested path; a symlink found there (swapped in after the walk) is refused.
        """
        try:
            return os.open(name or self.name, flags | _OPEN_FLAGS, mode, dir_fd=self.directory)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise _changed(self.requested) from None
            raise OSError(error.errno, error.strerror, self.requested) from None

    def make_parents(self) -> None:
        """Create the directories missing between the held directory and the target (for ``write``)."""
        while self._missing:
            part = self._missing[0]
            with contextlib.suppress(FileExistsError):  # made meanwhile: it must still be a real directory
                os.mkdir(part, dir_fd=self._directory)
            child = _entry(part, self._directory, last=False, requested=self.requested)
            if not isinstance(child, int):
                raise _changed(self.requested)
            os.close(self._directory)
            self._directory = child
            self._real_directory /= part
            self._missing.pop(0)

    def close(self) -> None:
        """Release the held directory."""
        if self._directory >= 0:
            os.close(self._directory)
            self._directory = -1

    def __enter__(self) -> Located:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class _Walk:
    """The directories held open on the way down (``stack``: name and descriptor, ``/`` first) and the names below
    the deepest existing one (``missing``)."""

    def __init__(self, requested: str) -> None:
        self.requested = requested
        self.stack: list[tuple[str, int]] = [("", os.open("/", _WALK_FLAGS | os.O_DIRECTORY))]
        self.missing: list[str] = []
        self.links = 0

    def up(self) -> None:
        """``..``: leave the last missing name, else the deepest open directory (never ``/``)."""
        if self.missing:
            self.missing.pop()
        elif len(self.stack) > 1:
            os.close(self.stack.pop()[1])

    def follow(self, target: str, parts: deque[str]) -> None:
        """A symlink on the way: its target's names come next (from ``/`` when absolute)."""
        self.links += 1
        if self.links > MAX_SYMLINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), self.requested)
        if target.startswith("/"):
            while len(self.stack) > 1:
                os.close(self.stack.pop()[1])
        parts.extendleft(reversed(target.split("/")))

    def close(self, keep_last: bool) -> None:
        """Close the held directories (but the deepest when ``keep_last``)."""
        for _, fd in self.stack[:-1] if keep_last else self.stack:
            os.close(fd)


def _walk(joined: str, requested: str, given: Path) -> Located:
    """Resolve the absolute path ``joined`` as the module docstring describes (containment is not checked)."""
    walk = _Walk(requested)
    parts = deque(joined.split("/"))
    name = "."
    try:
        while parts:
            part = parts.popleft()
            last = not parts
            name = "."
            if part in ("", "."):
                continue
            if part == "..":
                walk.up()
                continue
            entry = None if walk.missing else _entry(part, walk.stack[-1][1], last=last, requested=requested)
            if isinstance(entry, int):
                walk.stack.append((part, entry))
            elif isinstance(entry, str):
                walk.follow(entry, parts)
            elif last:
                name = part
            else:
                walk.missing.append(part)
    except BaseException:
        walk.close(keep_last=False)
        raise
    walk.close(keep_last=True)
    real = Path("/", *(part for part, _ in walk.stack[1:]))
    return Located(requested, given, walk.stack[-1][1], real, walk.missing, name)


def _entry(part: str, parent: int, *, last: bool, requested: str) -> int | str | None:
    """What ``part`` in ``parent`` is, for the walk: a symlink (its target), a directory on the way (opened), or
    ``None``: it does not exist, or it is the final name and no symlink (then it is not opened: it may be a FIFO).
    """
    try:
        if last:
            info = os.stat(part, dir_fd=parent, follow_symlinks=False)
            return os.readlink(part, dir_fd=parent) if stat.S_ISLNK(info.st_mode) else None
        fd = os.open(part, _WALK_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.EINVAL:  # the symlink was replaced between the stat and the readlink
            raise _changed(requested) from None
        raise OSError(error.errno, error.strerror, requested) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode):
            return os.readlink("", dir_fd=fd)  # the link this descriptor holds, whatever the name holds now
        if not stat.S_ISDIR(mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), requested)
        kept, fd = fd, -1
        return kept
    finally:
        if fd >= 0:
            os.close(fd)


@dataclass(frozen=True, slots=True)
class _Protected:
    """A folder file tools may not change, but for the places ``exempt`` inside it."""

    path: Path
    identity: _Identity | None
    description: str
    exempt: tuple[tuple[Path, _Identity | None], ...]

    @classmethod
    def of(cls, path: Path, description: str, exempt: Iterable[Path] = ()) -> _Protected:
        return cls(path, _identity(path), description, tuple((place, _own_identity(place)) for place in exempt))

    def contains(self, chain: Sequence[tuple[Path, _Identity | None]]) -> bool:
        """Whether the path whose :func:`_chain` this is lies in this folder (the folder itself counts)."""
        folded = str(self.path).casefold()
        for depth, (place, identity) in enumerate(chain):
            same = (identity is not None and identity == self.identity) or str(place).casefold() == folded
            if same:
                return not any(self._is_exempt(place, identity) for place, identity in chain[:depth])
        return False

    def _is_exempt(self, place: Path, identity: _Identity | None) -> bool:
        return any(
            place == path or (identity is not None and identity == exempt_identity)
            for path, exempt_identity in self.exempt
        )


class WorkspaceGuard:
    """Resolves tool paths and refuses those whose real path leaves the allowed roots."""

    def __init__(self, workspace: str | os.PathLike[str], allowed_roots: Iterable[str | os.PathLike[str]] = ()):
        self._workspace = _real(workspace)
        roots = [self._workspace]
        for root in allowed_roots:
            real = _real(root)
            if real not in roots:
                roots.append(real)
        self._roots = tuple(roots)

    @property
    def workspace(self) -> Path:
        """The workspace's real path; the cwd of ``bash`` and the base of relative paths."""
        return self._workspace

    @property
    def roots(self) -> tuple[Path, ...]:
        """The workspace followed by the extra allowed roots, all real paths."""
        return self._roots

    def contains(self, real_path: Path) -> bool:
        """Whether an already resolved path lies inside one of the roots (a root itself counts)."""
        return any(real_path == root or real_path.is_relative_to(root) for root in self._roots)

    def locate(self, requested: str, *, writable: bool = False) -> Located:
        """The target of ``requested``, its real parent directory held open; the caller closes it (blocking).

        Relative paths are taken from the workspace, absolute paths as they are; the target may not exist yet.
        Raises :class:`PathOutsideWorkspace` when its real path leaves the roots and, with ``writable``, a
        :class:`ToolError` for tiny-agent's own state (see :meth:`resolve_writable`); ``OSError`` for a path the
        walk cannot pass (a file used as a directory, a symlink loop, a folder it may not search).
        """
        if "\0" in requested:
            raise ToolError("path must not contain a NUL character")
        joined = os.path.join(self._workspace, requested)
        located = _walk(joined, requested, Path(os.path.normpath(joined)))
        try:
            self._check(located, writable=writable)
        except BaseException:
            located.close()
            raise
        return located

    def resolve(self, requested: str) -> Path:
        """The real path of ``requested``, checked as :meth:`locate` does (nothing is held open)."""
        with self.locate(requested) as located:
            return located.path

    def resolve_writable(self, requested: str) -> Path:
        """As :meth:`resolve`, and refuses the places tiny-agent itself keeps state in.

        Those are, for every allowed root, its ``.tiny-agent`` folder (sessions, ``bg`` metadata, tool output…)
        except ``.tiny-agent/skills``, which users and models may write; the app's config folder (settings and
        ``tool-permissions.json``: a model must not grant itself permissions); and the app's data folder (the
        index and ledger), except an allowed root inside it (the default workspace lives there). The model must
        not be able to rewrite the durable record of what it did, forge the metadata ``bg stop`` acts on, or
        widen its own permissions (an unsandboxed ``bash`` still could; its guard is then the approval policy).

        A path is inside a protected folder when, for the target (if it exists) or any existing ancestor, its
        ``(st_dev, st_ino)`` is the folder's, so another spelling of the same folder (a case variant on a
        case-insensitive file system, a bind mount, a hard-linked directory) is caught; or when its real path
        lies under the folder's real path, compared case-insensitively, which covers the parts that do not
        exist yet. Exceptions (``skills``, a nested root) count only below the protected folder, by identity or
        by their exact real path.
        """
        with self.locate(requested, writable=True) as located:
            return located.path

    def _check(self, located: Located, *, writable: bool) -> None:
        real = located.path
        if not self.contains(real):
            where = self._describe_roots()
            if self.contains(located.given):
                message = (
                    f"Path {located.requested} resolves through a symlink to {real}, which is outside {where}; "
                    "file tools are limited to the workspace."
                )
            else:
                message = f"Path {located.requested} is outside {where}; file tools are limited to the workspace."
            raise PathOutsideWorkspace(message, requested=located.requested, resolved=real)
        if writable:
            chain = _chain(real)
            for place in self._protected_places():
                if place.contains(chain):
                    raise ToolError(
                        f"Path {located.requested} is inside {place.description}; file tools may not change it."
                    )

    def _protected_places(self) -> list[_Protected]:
        """Computed on each call: the app folders follow the environment (``TINY_AGENT_CONFIG_DIR``…)."""
        places: list[_Protected] = []
        for root in self._roots:
            folder = _real(root / TINY_AGENT_FOLDER)
            places.append(_Protected.of(folder / SESSIONS_FOLDER, "the tiny-agent session folder"))
            places.append(
                _Protected.of(
                    folder,
                    f"the tiny-agent folder {folder} (only {TINY_AGENT_FOLDER}/{SKILLS_FOLDER} may be changed)",
                    # joined to the real .tiny-agent, not resolved: a `skills` symlink must not lead anywhere
                    exempt=(folder / SKILLS_FOLDER,),
                )
            )
        for description, directory in _app_folders():
            folder = _real(directory)
            places.append(_Protected.of(folder, f"{description} {folder}", exempt=self._roots))
        return places

    def _describe_roots(self) -> str:
        if len(self._roots) == 1:
            return f"the workspace {self._workspace}"
        extra = ", ".join(str(root) for root in self._roots[1:])
        return f"the workspace {self._workspace} and the allowed roots ({extra})"
