"""The built-in ``read`` tool (reference notes §6.2): a page of a UTF-8 text file.

Semantics are the reference's: CRLF becomes LF, a final empty line is dropped, at most 2,000 lines and 50 KiB of
joined text are returned, and ``\\n\\n[Showing lines A-B of N. Use offset=B+1 to continue.]`` follows when lines
remain. Unlike the reference, the file is streamed (memory stays near one page, not the whole file), the path
must stay inside the workspace (opened through the guard, race-free), and anything but a regular file (a FIFO,
socket or device, which could block or never end) is refused before it is read. Invalid UTF-8 is refused, as the
Python reference does.

``read`` is the only tool whose replay is ``safe`` (key ``builtin:read:v1``); the registry honours that only
for an instance of exactly this class.
"""

from __future__ import annotations

import asyncio
import codecs
import errno
import os
import stat
from collections.abc import Mapping
from typing import Any, BinaryIO

from tiny_agent_core.tools.base import (
    MAX_TOOL_LINES,
    MAX_TOOL_OUTPUT,
    BuiltinTool,
    ToolError,
    optional_positive_integer,
    required_string,
)
from tiny_agent_core.tools.guard import Located, WorkspaceGuard

__all__ = ["ReadTool", "open_regular", "read_page", "read_whole", "require_regular"]

_CHUNK = 64 * 1024


class ReadTool(BuiltinTool):
    """``read(path, offset?, limit?)``."""

    name = "read"
    replay = "safe"
    replay_key = "builtin:read:v1"
    description = (
        "Read a UTF-8 text file. Prefer this over cat or sed. Returns at most 2,000 complete lines or 50KB and "
        "includes an offset hint when more lines remain."
    )
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the UTF-8 text file."},
            "offset": {"type": "integer", "minimum": 1, "description": "1-indexed line number to start reading from."},
            "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to return."},
        },
        "required": ["path"],
    }

    def __init__(self, guard: WorkspaceGuard) -> None:
        self.guard = guard

    async def run(self, args: Mapping[str, Any], cancel: asyncio.Event | None) -> str:
        requested = required_string(args.get("path"), "path")
        offset = optional_positive_integer(args.get("offset"), "offset") or 1
        limit = optional_positive_integer(args.get("limit"), "limit") or MAX_TOOL_LINES
        return await asyncio.to_thread(read_page, self.guard, requested, offset, limit)


def read_page(guard: WorkspaceGuard, requested: str, offset: int = 1, limit: int = MAX_TOOL_LINES) -> str:
    """The ``read`` result for ``requested`` (blocking: call it in a worker thread)."""
    with guard.locate(requested) as target, open_regular(target) as file:
        return _page(file, requested, offset, limit)


_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFLNK: "a symbolic link",
}


def require_regular(mode: int, requested: str) -> None:
    """Refuse anything but a regular file, naming what it is (``<path> is a directory``, ``… is a socket``)."""
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFDIR:
        raise ToolError(f"{requested} is a directory")
    if kind != stat.S_IFREG:
        raise ToolError(f"{requested} is {_KINDS.get(kind, 'a special file')}, not a regular file")


def open_regular(target: Located) -> BinaryIO:
    """The target opened for binary reading; anything but a regular file is refused without blocking.

    The type is checked before opening (a device or socket is never opened) and again on the descriptor, which
    is opened ``O_NONBLOCK | O_NOFOLLOW`` so a FIFO swapped in meanwhile cannot block.
    """
    info = target.lstat()
    if info is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), target.requested)
    require_regular(info.st_mode, target.requested)
    fd = target.open(os.O_RDONLY | os.O_NONBLOCK)
    try:
        require_regular(os.fstat(fd).st_mode, target.requested)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_whole(target: Located, limit: int, purpose: str) -> bytes:
    """The whole regular file; one over ``limit`` bytes is refused (``… too large to <purpose>``) unread."""
    with open_regular(target) as file:
        size = os.fstat(file.fileno()).st_size
        data = file.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:  # the second: it grew while it was read
        raise ToolError(f"{target.requested} is too large to {purpose} (more than {limit:,} bytes).")
    return data


def _page(file: BinaryIO, requested: str, offset: int, limit: int) -> str:
    wanted = min(limit, MAX_TOOL_LINES)
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    selected: list[str] = []
    selected_bytes = 0
    selecting = True
    total = 0  # complete lines seen so far
    current = bytearray()  # the line being read, kept only while it may be selected (at most 50 KiB + 1)
    current_too_long = False
    pending = False  # bytes of an unterminated line have been read

    def finish_line(terminated: bool) -> None:
        nonlocal total, selecting, selected_bytes, current_too_long
        total += 1
        if selecting and total >= offset:
            line = bytes(current)
            if terminated and line.endswith(b"\r"):
                line = line[:-1]
            size = len(line) + (1 if selected else 0)
            if current_too_long or selected_bytes + size > MAX_TOOL_OUTPUT:
                selecting = False
            else:
                selected.append(line.decode("utf-8"))
                selected_bytes += size
                if len(selected) >= wanted:
                    selecting = False
        current.clear()
        current_too_long = False

    while piece := file.readline(_CHUNK):
        try:
            decoder.decode(piece)
        except UnicodeDecodeError:
            raise ToolError(
                f"{requested} is not valid UTF-8 text. Use bash with a byte-oriented command to inspect it."
            ) from None
        terminated = piece.endswith(b"\n")
        body = piece[:-1] if terminated else piece
        if selecting and total + 1 >= offset and not current_too_long:
            # keep one byte more than the budget (plus a CR) so an over-long line is recognised
            room = MAX_TOOL_OUTPUT + 2 - len(current)
            current.extend(body[:room])
            if len(body) > room:
                current_too_long = True
        if terminated:
            finish_line(True)
            pending = False
        else:
            pending = True
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise ToolError(
            f"{requested} is not valid UTF-8 text. Use bash with a byte-oriented command to inspect it."
        ) from None
    if pending:
        finish_line(False)

    if total == 0:
        if offset == 1:
            return ""
        raise ToolError(f"Offset {offset} is beyond end of file (0 lines total).")
    if offset > total:
        raise ToolError(f"Offset {offset} is beyond end of file ({total} lines total).")
    if not selected:
        return f"Line {offset} exceeds 50KB. Use bash with a byte-oriented command to inspect this line."
    end = offset + len(selected) - 1
    text = "\n".join(selected)
    if end < total:
        text += f"\n\n[Showing lines {offset}-{end} of {total}. Use offset={end + 1} to continue.]"
    return text
