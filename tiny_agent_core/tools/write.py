"""The built-in ``write`` tool (reference notes §6.3), and the atomic replacement and diff preview ``edit`` shares.

``write(path, content)`` creates parent directories and replaces the file, returning
``Successfully wrote <UTF-8 byte count> bytes to <path as given>.``. Better than the reference: the path must stay
in the workspace (a symlink pointing outside is refused, one pointing inside is written through to its target),
and the file is replaced atomically: a temporary file is created in the target's real directory (held open by the
guard, so never anywhere else), written, flushed and renamed over the target there, so a crash leaves the old or
the new content, never a torn file. An existing file keeps its permission bits (and, when possible, its owner); a
new file gets the usual ``0o666 & ~umask``. Replacing the file gives it a new inode, so hard links to the old file
keep the old content. A FIFO, socket or device is refused (never opened).

The approval preview (:func:`diff_preview`) is a unified diff, plus the real target when a symlink redirects the
path and warnings when the target is executable or inside version-control internals (``.git/hooks``…).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import errno
import os
import stat
from collections.abc import Callable, Mapping
from typing import Any

from tiny_agent_core.tools.base import BuiltinTool, Preview, ToolError, describe_os_error, required_string
from tiny_agent_core.tools.guard import Located, WorkspaceGuard
from tiny_agent_core.tools.read import read_whole, require_regular

__all__ = ["VCS_FOLDERS", "WriteTool", "atomic_write", "diff_preview", "target_warnings", "unified_diff"]

PREVIEW_MAX_FILE = 2 * 1024 * 1024
"""Files larger than this get no diff preview (the prompt says so instead); they are not read for it."""

PREVIEW_MAX_CHARS = 200_000
"""A diff preview longer than this is cut, with a note."""

VCS_FOLDERS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".husky", ".githooks"})
"""Folders whose contents tools run (hooks) or trust: a change inside one gets a warning in the approval."""

_TEMPORARY_ATTEMPTS = 100


class WriteTool(BuiltinTool):
    """``write(path, content)``."""

    name = "write"
    replay_key = "builtin:write:v1"
    description = (
        "Create a new UTF-8 text file or completely rewrite an existing file. Parent directories are created "
        "automatically. Use edit for partial changes."
    )
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to create or completely rewrite."},
            "content": {"type": "string", "description": "Complete UTF-8 file content."},
        },
        "required": ["path", "content"],
    }

    def __init__(self, guard: WorkspaceGuard) -> None:
        self.guard = guard

    @staticmethod
    def _arguments(args: Mapping[str, Any]) -> tuple[str, str]:
        requested = required_string(args.get("path"), "path")
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        return requested, content

    async def run(self, args: Mapping[str, Any], cancel: asyncio.Event | None) -> str:
        """Write ``content`` to the file (created or replaced) and say how many bytes."""
        requested, content = self._arguments(args)
        data = content.encode("utf-8")
        await asyncio.to_thread(self._write, requested, data)
        return f"Successfully wrote {len(data)} bytes to {requested}."

    def _write(self, requested: str, data: bytes) -> None:
        with self.guard.locate(requested, writable=True) as target:
            target.make_parents()
            atomic_write(target, data)

    def preview(self, args: Mapping[str, Any]) -> Preview | None:
        """The write as a diff against the current file, for the approval dialog."""
        try:
            requested, content = self._arguments(args)
        except ToolError as error:
            return Preview("diff", "", error=str(error))
        return diff_preview(self.guard, requested, lambda _before: content)


def diff_preview(guard: WorkspaceGuard, requested: str, change: Callable[[str | None], str]) -> Preview:
    """The approval preview of changing ``requested`` to ``change(current text or None)`` (blocking).

    ``change`` may raise :class:`ToolError` (the edit would fail): the preview then carries the error, and still
    the real target and the warnings.
    """
    try:
        with guard.locate(requested, writable=True) as target:
            shown = str(target.path) if target.redirected else None
            warnings = target_warnings(target)
            try:
                before = _current_text(target)
                diff = unified_diff(requested, before, change(before))
            except (ToolError, OSError) as error:
                return Preview("diff", "", error=_message(error), target=shown, warnings=warnings)
    except (ToolError, OSError) as error:
        return Preview("diff", "", error=_message(error))
    return Preview("diff", diff, target=shown, warnings=warnings)


def target_warnings(target: Located) -> tuple[str, ...]:
    """Why changing ``target`` deserves a second look: it is executable, or inside version-control internals."""
    warnings = []
    info = target.lstat()
    if info is not None and stat.S_ISREG(info.st_mode) and info.st_mode & 0o111:
        warnings.append(
            f"The target is executable (mode {stat.S_IMODE(info.st_mode):04o}) and keeps its mode: "
            "the change alters a program that may run."
        )
    folders = [part for part in target.path.parts if part.casefold() in VCS_FOLDERS]
    if folders:
        warnings.append(
            f"The target is inside a {folders[0]}/ folder: version-control internals, whose hooks run "
            "automatically (on commit, checkout…)."
        )
    return tuple(warnings)


def _current_text(target: Located) -> str | None:
    """The target's current text, ``None`` when it does not exist yet."""
    if target.lstat() is None:
        return None
    try:
        return read_whole(target, PREVIEW_MAX_FILE, "preview").decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError("the current file is not UTF-8 text; no diff preview") from None


def _message(error: ToolError | OSError) -> str:
    return describe_os_error(error) if isinstance(error, OSError) else str(error)


def unified_diff(requested: str, before: str | None, after: str) -> str:
    """A unified diff of a file change (``/dev/null`` as the old side of a new file), cut when very long."""
    old_lines = [] if before is None else before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    fromfile = "/dev/null" if before is None else f"a/{requested}"
    lines = []
    for line in difflib.unified_diff(old_lines, new_lines, fromfile=fromfile, tofile=f"b/{requested}"):
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    text = "".join(lines)
    if len(text) > PREVIEW_MAX_CHARS:
        text = text[:PREVIEW_MAX_CHARS] + f"\n… diff cut at {PREVIEW_MAX_CHARS} characters\n"
    return text


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)  # no race-free read elsewhere; restored at once
    os.umask(current)
    return current


def atomic_write(target: Located, data: bytes) -> None:
    """Replace ``target`` with ``data`` atomically, keeping the mode (and owner, when allowed) of an existing file.

    The temporary file is made in the target's held directory and renamed over the target there; it is removed
    again on any failure.
    """
    requested = target.requested
    info = target.lstat()
    if info is not None:
        require_regular(info.st_mode, requested)
        if not os.access(target.name, os.W_OK, dir_fd=target.directory):
            raise ToolError(f"Permission denied: {requested}")
    mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask()
    directory = target.directory
    temporary, fd = _create_temporary(target)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fchmod(file.fileno(), mode)
            if info is not None and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):
                    os.fchown(file.fileno(), info.st_uid, info.st_gid)
            os.fsync(file.fileno())
        os.replace(temporary, target.name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise
    with contextlib.suppress(OSError):
        synced = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=directory)
        try:
            os.fsync(synced)
        finally:
            os.close(synced)


def _create_temporary(target: Located) -> tuple[str, int]:
    """A new, empty ``.<name>.<random>.tmp`` beside the target (``O_EXCL``: never an existing file or link)."""
    for _ in range(_TEMPORARY_ATTEMPTS):
        name = f".{target.name}.{os.urandom(6).hex()}.tmp"
        try:
            return name, target.open(os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, name=name)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", target.requested)
