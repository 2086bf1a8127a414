"""The built-in ``write`` tool (reference notes §6.3) and the atomic file replacement ``edit`` shares.

``write(path, content)`` creates parent directories and replaces the file, returning
``Successfully wrote <UTF-8 byte count> bytes to <path as given>.``. Better than the reference: the path must stay
in the workspace (a symlink pointing outside is refused, one pointing inside is written through to its target),
and the file is replaced atomically (a temporary file in the same directory, flushed, then ``os.replace``), so a
crash leaves the old or the new content, never a torn file. An existing file keeps its permission bits (and, when
possible, its owner); a new file gets the usual ``0o666 & ~umask``. Replacing the file gives it a new inode, so
hard links to the old file keep the old content.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tiny_agent_core.tools.base import BuiltinTool, Preview, ToolError, required_string
from tiny_agent_core.tools.guard import WorkspaceGuard

__all__ = ["WriteTool", "atomic_write", "unified_diff"]

PREVIEW_MAX_FILE = 2 * 1024 * 1024
"""Files larger than this get no diff preview (the prompt says so instead)."""

PREVIEW_MAX_CHARS = 200_000
"""A diff preview longer than this is cut, with a note."""


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

    def _arguments(self, args: Mapping[str, Any]) -> tuple[str, str, Path]:
        requested = required_string(args.get("path"), "path")
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        return requested, content, self.guard.resolve_writable(requested)

    async def run(self, args: Mapping[str, Any], cancel: asyncio.Event | None) -> str:
        requested, content, path = self._arguments(args)
        data = content.encode("utf-8")
        await asyncio.to_thread(self._write, path, requested, data)
        return f"Successfully wrote {len(data)} bytes to {requested}."

    def _write(self, path: Path, requested: str, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # the directories just made are plain names under a checked prefix; check again all the same
        self.guard.resolve_writable(str(path))
        atomic_write(path, data, requested=requested)

    def preview(self, args: Mapping[str, Any]) -> Preview | None:
        try:
            requested, content, path = self._arguments(args)
        except ToolError as error:
            return Preview("diff", "", error=str(error))
        try:
            before = read_for_preview(path)
        except ToolError as error:
            return Preview("diff", "", error=str(error))
        return Preview("diff", unified_diff(requested, before, content))


def read_for_preview(path: Path) -> str | None:
    """The current text of ``path`` for a diff; ``None`` when it does not exist. Raises a ToolError to explain."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ToolError(f"cannot read the current file: {error.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{path} is a directory")
    if info.st_size > PREVIEW_MAX_FILE:
        raise ToolError(f"the current file is too large to preview ({info.st_size} bytes)")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError("the current file is not UTF-8 text; no diff preview") from None
    except OSError as error:
        raise ToolError(f"cannot read the current file: {error.strerror}") from None


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


def atomic_write(path: Path, data: bytes, *, requested: str | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, keeping the mode (and owner, when allowed) of an existing file."""
    shown = requested if requested is not None else str(path)
    try:
        info: os.stat_result | None = path.stat()
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{shown} is a directory")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown} is not a regular file")
    if info is not None and not os.access(path, os.W_OK):
        raise ToolError(f"Permission denied: {shown}")
    mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask()
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fchmod(file.fileno(), mode)
            if info is not None and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):
                    os.fchown(file.fileno(), info.st_uid, info.st_gid)
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):
        directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
