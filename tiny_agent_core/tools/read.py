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
        """A page of the file (off the event loop)."""
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


def _not_utf8(requested: str) -> ToolError:
    return ToolError(f"{requested} is not valid UTF-8 text. Use bash with a byte-oriented command to inspect it.")


class _Page:
    """The lines ``offset``… of a file read line by line: at most ``wanted`` lines and 50 KiB of joined text, with
    only the line being read kept beyond them (at most 50 KiB + 2 bytes of it)."""

    def __init__(self, offset: int, wanted: int) -> None:
        self.offset = offset
        self.wanted = wanted
        self.selected: list[str] = []
        self.selected_bytes = 0
        self.selecting = True
        self.total = 0  # complete lines seen so far
        self.current = bytearray()  # the line being read, kept only while it may be selected
        self.current_too_long = False

    def add_piece(self, body: bytes) -> None:
        """Bytes of the line being read (without its newline)."""
        if self.selecting and self.total + 1 >= self.offset and not self.current_too_long:
            # keep one byte more than the budget (plus a CR) so an over-long line is recognised
            room = MAX_TOOL_OUTPUT + 2 - len(self.current)
            self.current.extend(body[:room])
            if len(body) > room:
                self.current_too_long = True

    def finish_line(self, terminated: bool) -> None:
        """The line being read ended (at a newline, or at the end of the file)."""
        self.total += 1
        if self.selecting and self.total >= self.offset:
            self._select(terminated)
        self.current.clear()
        self.current_too_long = False

    def _select(self, terminated: bool) -> None:
        line = bytes(self.current)
        if terminated and line.endswith(b"\r"):
            line = line[:-1]
        size = len(line) + (1 if self.selected else 0)
        if self.current_too_long or self.selected_bytes + size > MAX_TOOL_OUTPUT:
            self.selecting = False
            return
        self.selected.append(line.decode("utf-8"))
        self.selected_bytes += size
        if len(self.selected) >= self.wanted:
            self.selecting = False

    def text(self) -> str:
        """The page as the tool returns it, with the continuation hint; a bad offset is a :class:`ToolError`."""
        offset, total, selected = self.offset, self.total, self.selected
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


def _page(file: BinaryIO, requested: str, offset: int, limit: int) -> str:
    page = _Page(offset, min(limit, MAX_TOOL_LINES))
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    pending = False  # bytes of an unterminated line have been read
    while piece := file.readline(_CHUNK):
        try:
            decoder.decode(piece)
        except UnicodeDecodeError:
            raise _not_utf8(requested) from None
        terminated = piece.endswith(b"\n")
        page.add_piece(piece[:-1] if terminated else piece)
        if terminated:
            page.finish_line(True)
        pending = not terminated
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise _not_utf8(requested) from None
    if pending:
        page.finish_line(False)
    return page.text()
