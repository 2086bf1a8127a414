"""A private copy of a workspace for one run of a compare, and the changes that run made to it (no Qt here).

Each model of a compare run works in its own copy, so their tools cannot collide and the original stays as it was:

* **a git worktree** when the workspace is (inside) a git repository with a commit: ``git worktree add --detach``
  of the working tree's current state (``git stash create`` records uncommitted changes of tracked files as a
  commit object without touching the working tree, index or refs), then the untracked files git does not ignore
  are copied in. Objects are shared with the repository; :func:`remove_copy` removes the worktree again;
* **a plain copy** otherwise, in the data folder: everything except ``.git/``, ``.tiny-agent/`` and heavy
  folders that are rebuilt rather than edited (:data:`SKIPPED_FOLDERS`), bounded by :class:`CopyLimits`
  (:class:`WorkspaceTooLargeError` names the size and the way out).

Repository contents are hostile: nothing is followed out of the workspace. Directories are walked without
following symlinks, files are opened with ``O_NOFOLLOW`` and must be regular files when opened (FIFOs, sockets and
devices are skipped), and a symlink is recreated only when it is relative and resolves inside the workspace (an
absolute one would point back at the original; one leaving the workspace could reach the data folder). Git runs
no program the repository's own configuration names (hooks, file-system monitor, filter drivers — also those only
a linked worktree sees —, submodule fetches, credential helpers, password prompts), uses no transport (a partial
clone does not fetch), and gets none of this process's secret-looking environment variables.

:func:`workspace_changes` compares a copy with the tree it started from: the copy records a manifest (path →
SHA-256) when made, and a changed file's old text is read from the original while the original still has the
starting content (otherwise the diff says it is unavailable). :func:`keep_changes` applies a run's changes to the
original ("keep this one"): only when every file it touches still has the starting content, and through the file
tools' :class:`~tiny_agent_core.tools.guard.WorkspaceGuard`, so nothing is written outside the workspace or into
``.tiny-agent/``.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tiny_agent_core.errors import TinyAgentError
from tiny_agent_core.tools.base import ToolError
from tiny_agent_core.tools.environment import looks_secret
from tiny_agent_core.tools.guard import WorkspaceGuard

__all__ = [
    "SKIPPED_FOLDERS",
    "CopyLimits",
    "FileChange",
    "KeepConflictError",
    "WorkspaceCopy",
    "WorkspaceCopyError",
    "WorkspaceTooLargeError",
    "changes_diff",
    "keep_changes",
    "make_copy",
    "remove_copy",
    "workspace_changes",
]

SKIPPED_FOLDERS = frozenset(
    {".git", ".tiny-agent", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".tox", ".nox"}
)  # fmt: skip
"""Folder names a plain copy leaves out (version control, sessions, dependencies and caches)."""
_GIT_TIMEOUT = 120.0
_CHUNK = 1 << 20
_DIFF_FILE_LIMIT = 1 << 20
"""Files larger than this (bytes) are reported as changed without a line diff."""


class WorkspaceCopyError(TinyAgentError):
    """A workspace could not be copied for a run (a git command failed, the disk is full…)."""


class WorkspaceTooLargeError(WorkspaceCopyError):
    """The workspace holds more than a plain copy may take (:class:`CopyLimits`)."""


class KeepConflictError(WorkspaceCopyError):
    """The original changed since the run started where the run changed it; nothing was applied."""


@dataclass(frozen=True, slots=True)
class CopyLimits:
    """Bounds of a plain copy (and of the untracked files copied into a worktree)."""

    max_bytes: int = 200 * 1024 * 1024
    max_files: int = 20_000


@dataclass(frozen=True)
class WorkspaceCopy:
    """A copy of a workspace that one run works in."""

    path: Path
    """The folder the run works in (inside a worktree: the workspace's place in it)."""
    original: Path
    kind: Literal["worktree", "copy"]
    manifest: dict[str, str] = field(repr=False)
    """Relative path → SHA-256 of every file of the starting tree (as copied)."""
    skipped: tuple[str, ...] = ()
    """Relative paths left out, each with the reason (symlinks leaving the workspace, special files)."""
    root: Path | None = None
    """The worktree's top folder (``None`` for a plain copy, whose top folder is :attr:`path`)."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file a run added, modified or deleted."""

    path: str
    status: Literal["added", "modified", "deleted"]
    diff: str | None
    """A unified diff; ``None`` for a binary or large file, or when the starting text is no longer available."""
    added: int = 0
    removed: int = 0
    note: str = ""
    """Why there is no diff, when there is none."""


class _Budget:
    def __init__(self, limits: CopyLimits, original: Path) -> None:
        self.limits = limits
        self.original = original
        self.bytes = 0
        self.files = 0

    def add_file(self) -> None:
        self.files += 1
        self._check()

    def add_bytes(self, size: int) -> None:
        self.bytes += size
        self._check()

    def _check(self) -> None:
        if self.bytes > self.limits.max_bytes or self.files > self.limits.max_files:
            skipped = ", ".join(sorted(SKIPPED_FOLDERS - {".git", ".tiny-agent"}))
            raise WorkspaceTooLargeError(
                f"{self.original} is too large to copy for a compare run (more than "
                f"{self.limits.max_bytes // (1024 * 1024)} MB or {self.limits.max_files:,} files outside .git/ and "
                f"{skipped}). Make it a git repository (each run then gets a worktree that shares its objects) or "
                "compare in a smaller folder."
            )


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _pump(source: int, target: int, digest: Any = None, budget: _Budget | None = None) -> None:
    """Copy everything from fd ``source`` to fd ``target``, hashing into ``digest`` and counting against ``budget``."""
    while chunk := os.read(source, _CHUNK):
        if budget is not None:
            budget.add_bytes(len(chunk))
        if digest is not None:
            digest.update(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(target, view) :]


def _copy_file(source: Path, target: Path, budget: _Budget) -> str | None:
    """Copy one regular file without following a symlink; its SHA-256, or ``None`` when it is not a regular file."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None  # a symlink swapped in, vanished or unreadable: not copied
    digest = hashlib.sha256()
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        budget.add_file()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(target, flags, stat.S_IMODE(info.st_mode) | 0o600)
        try:
            _pump(fd, out, digest, budget)
        finally:
            os.close(out)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _copy_symlink(source: Path, target: Path, root: str) -> bool:
    """Recreate a relative symlink that resolves inside ``root``; ``False`` (not copied) otherwise."""
    link = os.readlink(source)
    if os.path.isabs(link) or not _inside(os.path.realpath(source.parent / link), root):
        return False
    os.symlink(link, target)
    return True


def _copy_entry(
    source: Path, target: Path, relative: str, root: str, budget: _Budget, manifest: dict[str, str], skipped: list[str]
) -> None:
    mode = os.lstat(source).st_mode
    if stat.S_ISLNK(mode):
        if not _copy_symlink(source, target, root):
            skipped.append(f"{relative} (a symlink leaving the workspace or absolute)")
    elif stat.S_ISREG(mode):
        digest = _copy_file(source, target, budget)
        if digest is None:
            skipped.append(f"{relative} (not a regular file)")
        else:
            manifest[relative] = digest
    elif not stat.S_ISDIR(mode):
        skipped.append(f"{relative} (not a regular file)")


def _walk(root: Path, relative: str = "") -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every entry under ``root`` (not following symlinks), skipping :data:`SKIPPED_FOLDERS`, as (relative, entry)."""
    with os.scandir(root / relative if relative else root) as entries:
        for entry in sorted(entries, key=lambda item: item.name):
            path = f"{relative}/{entry.name}" if relative else entry.name
            if entry.name in SKIPPED_FOLDERS:
                continue
            yield path, entry
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(root, path)


def _plain_copy(original: Path, destination: Path, limits: CopyLimits) -> WorkspaceCopy:
    root = os.path.realpath(original)
    budget = _Budget(limits, original)
    manifest: dict[str, str] = {}
    skipped: list[str] = []
    destination.mkdir(parents=True, mode=0o700)
    for relative, entry in _walk(Path(root)):
        target = destination / relative
        if entry.is_dir(follow_symlinks=False):
            target.mkdir(mode=0o700)
            continue
        _copy_entry(Path(entry.path), target, relative, root, budget, manifest, skipped)
    return WorkspaceCopy(destination, original, "copy", manifest, tuple(skipped))


_NO_PROGRAMS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "submodule.recurse=false",
                "-c", "protocol.allow=never", "-c", "credential.helper=", "-c", "core.askPass=")  # fmt: skip
"""A workspace's own git configuration (one unpacked with its ``.git`` folder) may name programs git runs on its
own: hooks, the file-system monitor that status-like commands (``stash create``, ``ls-files``) call, submodule
fetches, credential helpers and password prompts (which a user's Git LFS filter may ask for). None of them runs for
the app's commands; transports are off in :func:`_git_environment` and filter drivers in :func:`_filters_off`."""


def _git_environment() -> dict[str, str]:
    """This process's environment without anything secret-looking (provider keys live here), plus git's own: no
    transport at all (``GIT_ALLOW_PROTOCOL`` empty overrides a repository's ``protocol.<name>.allow``, so a partial
    clone cannot fetch a missing object through its remote's ``uploadpack`` program), no prompts."""
    environment = {name: value for name, value in os.environ.items() if not looks_secret(name)}
    return environment | {
        "GIT_ALLOW_PROTOCOL": "",
        "GIT_NO_LAZY_FETCH": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        "GIT_AUTHOR_NAME": "tiny-agent",
        "GIT_AUTHOR_EMAIL": "tiny-agent@localhost",
        "GIT_COMMITTER_NAME": "tiny-agent",
        "GIT_COMMITTER_EMAIL": "tiny-agent@localhost",
    }


def _run_git(cwd: Path, options: Sequence[str], args: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", *options, "-C", str(cwd), *args],
            capture_output=True,
            env=_git_environment(),
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise WorkspaceCopyError(f"git {args[0]} failed in {cwd}: {error}") from error


_TRUSTED_SCOPES = frozenset({"global", "system", "command"})
"""What the user wrote (``~/.gitconfig``, ``/etc/gitconfig``, ``GIT_CONFIG_PARAMETERS``), not the repository."""


def _filters_off(cwd: Path) -> list[str]:
    """Options that switch off each filter driver the repository's own configuration defines, as git run in ``cwd``
    sees it (``.git/config``, ``config.worktree``, and files either includes, conditional ones too): ``clean``,
    ``smudge`` and ``process`` run programs on checkout and on hashing the working tree. The user's global and
    system drivers (Git LFS) stay. A name that cannot be given to ``-c`` refuses the copy rather than run it."""
    listed = _run_git(cwd, _NO_PROGRAMS, ["config", "--includes", "--show-scope", "-z", "--get-regexp", r"^filter\."])
    fields = listed.stdout.split(b"\0")
    keys = {
        entry.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        for scope, entry in zip(fields[0::2], fields[1::2], strict=False)
        if scope.decode("utf-8", "replace") not in _TRUSTED_SCOPES
    }
    options: list[str] = []
    for name in sorted({key[len("filter.") : key.rindex(".")] for key in keys if key.count(".") >= 2}):
        if "=" in name or not name.isprintable():
            raise WorkspaceCopyError(
                f"the repository's git configuration defines a filter named {name!r}, which git cannot be told to "
                "skip; remove it from .git/config to compare here"
            )
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            options += ["-c", f"filter.{name}.{key}={value}"]
    return options


class _Git:
    """git run in one folder, with the options that switch off that folder's own programs (:data:`_NO_PROGRAMS`,
    :func:`_filters_off`) read once; raises :class:`WorkspaceCopyError` for filters that cannot be switched off."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self._options = [*_NO_PROGRAMS, *_filters_off(cwd)]

    def __call__(self, *args: str, check: bool = True) -> str:
        done = _run_git(self.cwd, self._options, args)
        if check and done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise WorkspaceCopyError(
                f"git {args[0]} failed in {self.cwd}: {message[-1] if message else done.returncode}"
            )
        return done.stdout.decode("utf-8", "surrogateescape")


def _git_top(git: _Git) -> Path | None:
    """The top folder of the repository git runs in, when it has a commit; else ``None``."""
    try:
        top = git("rev-parse", "--show-toplevel").strip()
        git("rev-parse", "--verify", "-q", "HEAD")
    except WorkspaceCopyError:
        return None
    return Path(top) if top else None


def _worktree(git: _Git, top: Path, destination: Path, limits: CopyLimits) -> WorkspaceCopy:
    original = git.cwd
    start = git("stash", "create").strip() or "HEAD"
    destination.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Checked out from inside the new worktree, so that filters switched on only there (config.worktree, an
    # includeIf matching linked worktrees' git folders) are among those switched off.
    git("worktree", "add", "--no-checkout", "--detach", str(destination), start)
    try:
        _Git(destination)("reset", "--hard", "-q")
    except BaseException:
        git("worktree", "remove", "--force", str(destination), check=False)
        raise
    relative_root = os.path.relpath(os.path.realpath(original), os.path.realpath(top))
    path = destination if relative_root == "." else destination / relative_root
    try:
        root = os.path.realpath(original)
        budget = _Budget(limits, original)
        skipped: list[str] = []
        untracked = git("ls-files", "--others", "--exclude-standard", "-z").split("\0")
        for relative in filter(None, untracked):
            if any(part in SKIPPED_FOLDERS for part in Path(relative).parts):
                continue
            target = path / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            _copy_entry(original / relative, target, relative, root, budget, {}, skipped)
        manifest = _manifest(path)
    except BaseException:
        git("worktree", "remove", "--force", str(destination), check=False)
        raise
    return WorkspaceCopy(path, original, "worktree", manifest, tuple(skipped), destination)


def _sha256(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    digest = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _manifest(root: Path) -> dict[str, str]:
    manifest: dict[str, str] = {}
    for relative, entry in _walk(root):
        if entry.is_file(follow_symlinks=False) and (digest := _sha256(Path(entry.path))) is not None:
            manifest[relative] = digest
    return manifest


def make_copy(original: Path, destination: Path, *, limits: CopyLimits | None = None) -> WorkspaceCopy:
    """Copy workspace ``original`` for one run: a git worktree at ``destination`` when ``original`` is in a git
    repository with a commit, else a plain copy at ``destination`` (which must not exist). Blocking: call it in a
    worker thread. Raises :class:`WorkspaceTooLargeError` (nothing is left behind) or
    :class:`WorkspaceCopyError`."""
    limits = limits or CopyLimits()
    if destination.exists():
        raise WorkspaceCopyError(f"{destination} already exists; a copy needs a new folder.")
    # git's options are read first: a repository whose filters git cannot be told to skip is refused, not copied
    git = _Git(original) if shutil.which("git") is not None else None
    top = _git_top(git) if git is not None else None
    try:
        if git is not None and top is not None:
            return _worktree(git, top, destination, limits)
        return _plain_copy(original, destination, limits)
    except OSError as error:
        shutil.rmtree(destination, ignore_errors=True)
        raise WorkspaceCopyError(f"Copying {original} to {destination} failed: {error.strerror or error}") from error
    except BaseException:
        shutil.rmtree(destination, ignore_errors=True)
        raise


def remove_copy(copy: WorkspaceCopy) -> None:
    """Remove a copy (a worktree through git, so the repository forgets it). Blocking."""
    if copy.kind == "worktree" and copy.root is not None:
        git = _Git(copy.original)
        git("worktree", "remove", "--force", str(copy.root), check=False)
        shutil.rmtree(copy.root, ignore_errors=True)
        git("worktree", "prune", check=False)
    else:
        shutil.rmtree(copy.path, ignore_errors=True)


def _read_text(path: Path, expected: str | None) -> tuple[str | None, str]:
    """The text of ``path`` if it is small, UTF-8 and (when ``expected`` is given) still has that SHA-256."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None, "the starting text is no longer available"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _DIFF_FILE_LIMIT:
            return None, "large or not a regular file"
        data = os.read(fd, _DIFF_FILE_LIMIT + 1)
    finally:
        os.close(fd)
    if expected is not None and hashlib.sha256(data).hexdigest() != expected:
        return None, "the original changed since the run started"
    if b"\0" in data:
        return None, "binary"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "binary"


def _change(copy: WorkspaceCopy, relative: str, status: Literal["added", "modified", "deleted"]) -> FileChange:
    old: str | None = ""
    new: str | None = ""
    note = ""
    if status != "added":
        old, note = _read_text(copy.original / relative, copy.manifest[relative])
    if status != "deleted" and old is not None:
        new, note = _read_text(copy.path / relative, None)
    if old is None or new is None:
        return FileChange(relative, status, None, note=note)
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            "/dev/null" if status == "added" else f"a/{relative}",
            "/dev/null" if status == "deleted" else f"b/{relative}",
        )
    )
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return FileChange(relative, status, text, added, removed)


def workspace_changes(copy: WorkspaceCopy) -> list[FileChange]:
    """What the run changed in ``copy`` compared with its starting tree, by path. Blocking."""
    now = _manifest(copy.path)
    out: list[FileChange] = []
    for relative in sorted(now.keys() | copy.manifest.keys()):
        before, after = copy.manifest.get(relative), now.get(relative)
        if before == after:
            continue
        status: Literal["added", "modified", "deleted"] = (
            "added" if before is None else "deleted" if after is None else "modified"
        )
        out.append(_change(copy, relative, status))
    return out


def changes_diff(changes: list[FileChange]) -> str:
    """The changes as one patch text (files without a line diff are named with the reason)."""
    parts: list[str] = []
    for change in changes:
        if change.diff is not None:
            parts.append(change.diff)
        else:
            parts.append(f"{change.status} {change.path} ({change.note or 'no line diff'})\n")
    return "".join(parts)


def _open_copied(copy: WorkspaceCopy, relative: str) -> int:
    """The copy's file ``relative``, opened for reading through a guard of the copy: what a run left there (a link
    leading out of the copy, a FIFO swapped in by a process still running in it) is refused with
    :class:`WorkspaceCopyError`, never followed or waited on."""
    try:
        with WorkspaceGuard(copy.path).locate(relative) as located:
            source = located.open(os.O_RDONLY | os.O_NONBLOCK)
    except (ToolError, OSError) as error:
        raise WorkspaceCopyError(f"{relative} of the run's copy cannot be kept: {error}") from error
    if not stat.S_ISREG(os.fstat(source).st_mode):
        os.close(source)
        raise WorkspaceCopyError(f"{relative} of the run's copy is not a regular file; nothing was kept from it.")
    return source


def keep_changes(copy: WorkspaceCopy, changes: list[FileChange]) -> None:
    """Apply ``changes`` (of :func:`workspace_changes`) to the original workspace: a changed or added file of the
    copy replaces the original's (atomically, with the copy's mode), a deleted one is removed. Blocking.

    First every original file touched must still be as the run started (an added file must not exist yet), else
    :class:`KeepConflictError` names them and nothing is written. Paths are located with the file tools' guard
    (writable), all of them before the first write: a symlink leading out of the workspace, or ``.tiny-agent/``,
    refuses the whole keep (:class:`~tiny_agent_core.tools.guard.PathOutsideWorkspace`).
    """
    conflicts = [
        change.path
        for change in changes
        if (_sha256(copy.original / change.path) if (copy.original / change.path).exists() else None)
        != copy.manifest.get(change.path)
    ]
    if conflicts:
        raise KeepConflictError(
            f"{', '.join(conflicts)} changed in {copy.original} since the run started; nothing was applied. "
            "Apply the diff by hand, or run the compare again."
        )
    guard = WorkspaceGuard(copy.original)
    for change in changes:  # every path, in the workspace and in the copy, is checked before the first write
        guard.locate(change.path, writable=True).close()
        if change.status != "deleted":
            os.close(_open_copied(copy, change.path))
    for change in changes:
        with guard.locate(change.path, writable=True) as located:
            if change.status == "deleted":
                os.unlink(located.name, dir_fd=located.directory)
                continue
            located.make_parents()
            source = _open_copied(copy, change.path)
            temporary = f".{located.name}.{os.urandom(6).hex()}.keep"
            try:
                mode = stat.S_IMODE(os.fstat(source).st_mode)
                target = located.open(os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode, name=temporary)
                try:
                    _pump(source, target)
                    os.fsync(target)
                finally:
                    os.close(target)
                os.rename(temporary, located.name, src_dir_fd=located.directory, dst_dir_fd=located.directory)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=located.directory)
                raise
            finally:
                os.close(source)
