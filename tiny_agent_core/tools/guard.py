"""Workspace containment for the file tools (``read``, ``write``, ``edit``).

The reference resolves any path anywhere (notes §6.1). Here a path is resolved against the workspace and then
checked on its *real* path (``os.path.realpath``: every symlink resolved, ``..`` applied after resolution), so
``..``, absolute paths outside the workspace, and symlinks whose target leaves it are all refused. A file that
does not exist yet is checked through its resolved parent (realpath resolves the existing prefix and keeps the
rest), so a dangling symlink pointing outside is refused too.

The allowed roots are the workspace plus the roots the caller passes in: widening is an explicit
per-workspace setting (see :class:`~tiny_agent_core.tools.approval.ToolSettings`), never something a model can
ask for. The tools operate on the *resolved* path afterwards, so a symlink swapped in between the check and the
use of the final component is not followed out of the workspace. A concurrent process that swaps an
intermediate directory for a symlink can still race the check; closing that needs ``openat2`` with
``RESOLVE_BENEATH``, which Python does not expose. ``bash`` is not contained (a shell can reach anything): its
guard is the approval policy.

``write`` and ``edit`` resolve through :meth:`WorkspaceGuard.resolve_writable`, which also keeps them out of
tiny-agent's own state: every root's ``.tiny-agent`` folder but ``.tiny-agent/skills``, and the app's config and
data folders (compared by file identity as well as by path, so other spellings of those folders are refused too).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tiny_agent_core.tools.base import ToolError

__all__ = ["PathOutsideWorkspace", "WorkspaceGuard"]

TINY_AGENT_FOLDER = ".tiny-agent"
SESSIONS_FOLDER = "sessions"
SKILLS_FOLDER = "skills"

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
    # imported here: the tools package must not pull the settings (and the providers) in at import time
    from tiny_agent_core.ledger.paths import data_dir
    from tiny_agent_core.settings import config_dir

    return [("the tiny-agent configuration folder", config_dir()), ("the tiny-agent data folder", data_dir())]


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

    def resolve(self, requested: str) -> Path:
        """The real path a tool should use for ``requested``; raises :class:`PathOutsideWorkspace`.

        Relative paths are taken from the workspace, absolute paths as they are. The result may not exist yet.
        """
        if "\0" in requested:
            raise ToolError("path must not contain a NUL character")
        joined = os.path.join(self._workspace, requested)
        real = _real(joined)
        if self.contains(real):
            return real
        lexical = Path(os.path.normpath(joined))
        where = self._describe_roots()
        if self.contains(lexical):
            message = (
                f"Path {requested} resolves through a symlink to {real}, which is outside {where}; "
                "file tools are limited to the workspace."
            )
        else:
            message = f"Path {requested} is outside {where}; file tools are limited to the workspace."
        raise PathOutsideWorkspace(message, requested=requested, resolved=real)

    def resolve_writable(self, requested: str) -> Path:
        """As :meth:`resolve`, and refuses the places tiny-agent itself keeps state in.

        Those are, for every allowed root, its ``.tiny-agent`` folder (sessions, ``bg`` metadata, tool output…)
        except ``.tiny-agent/skills``, which users and models may write; the app's config folder (settings and
        ``tool-permissions.json``: a model must not grant itself permissions); and the app's data folder (the
        index and ledger), except an allowed root inside it (the default workspace lives there). The model must
        not be able to rewrite the durable record of what it did, forge the metadata ``bg stop`` acts on, or
        widen its own permissions (``bash`` still could; its guard is the approval policy).

        A path is inside a protected folder when, for the target (if it exists) or any existing ancestor, its
        ``(st_dev, st_ino)`` is the folder's, so another spelling of the same folder (a case variant on a
        case-insensitive file system, a bind mount, a hard-linked directory) is caught; or when its real path
        lies under the folder's real path, compared case-insensitively, which covers the parts that do not
        exist yet. Exceptions (``skills``, a nested root) count only below the protected folder, by identity or
        by their exact real path.
        """
        path = self.resolve(requested)
        chain = _chain(path)
        for place in self._protected_places():
            if place.contains(chain):
                raise ToolError(f"Path {requested} is inside {place.description}; file tools may not change it.")
        return path

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
