"""The stdio transport of a local MCP server, with a bound on the size of one message.

The SDK's own ``stdio_client`` buffers a line until its newline, however long, so a server that writes without
one could grow this process's memory without end. This transport is the same protocol (newline-delimited
JSON-RPC on the child's stdin and stdout, parsed by the SDK's own message model) with two differences: a message
longer than :data:`MAX_MESSAGE_BYTES` ends the connection (the session's pending requests fail at once), and it
is POSIX only (as this app is). Stopping follows the SDK's order, each step bounded: stdin is closed, the server
gets 2 s to exit, then its process group is terminated (SIGTERM, 2 s, SIGKILL) with the SDK's
``terminate_posix_process_tree``, which also reaches what it left running in its group.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TextIO

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

__all__ = ["MAX_MESSAGE_BYTES", "bounded_stdio"]

_log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The longest message (one line) a local server may send."""
EXIT_GRACE = 2.0
"""Seconds a server has to exit once its stdin is closed, and again after SIGTERM."""
_POLL = 0.01

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


@contextlib.asynccontextmanager
async def bounded_stdio(
    command: str,
    args: list[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    errlog: TextIO,
    on_lost: Callable[[str], None],
) -> AsyncIterator[Streams]:
    """Start ``command`` in a new session and speak JSON-RPC lines with it; stop it on leaving (bounded).

    ``on_lost`` hears why the connection ended early (an over-long message, stdin no longer read, the server's
    output closed: it exited) before the session sees it closed."""
    limit = MAX_MESSAGE_BYTES
    process = await anyio.open_process([command, *args], env=dict(env), cwd=cwd, stderr=errlog, start_new_session=True)
    incoming_writer, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        async with incoming_writer:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for chunk in process.stdout:
                    buffer += chunk
                    while 0 <= (end := buffer.find(b"\n")) <= limit:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        await incoming_writer.send(_parse(line))
                    if end > limit or len(buffer) > limit:  # an over-long line, complete or not
                        on_lost(f"the server sent a message over {limit} bytes")
                        return
            on_lost("the server closed its output (it exited)")  # end of file: nothing more will come

    async def write() -> None:
        assert process.stdin is not None
        async with outgoing_reader:
            try:
                async for message in outgoing_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                on_lost("the server stopped reading its input")
                await incoming_writer.aclose()  # let pending requests fail now

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        try:
            yield incoming, outgoing
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                await incoming.aclose()
                await outgoing.aclose()
            tasks.cancel_scope.cancel()


def _parse(line: bytes) -> SessionMessage | Exception:
    """One line as a message, or the parse error as a value for the session to surface."""
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as error:
        return error


async def _stop(process: Process) -> None:
    """Close stdin, give the server :data:`EXIT_GRACE` to exit, then end its process group."""
    assert process.stdin is not None
    assert process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    await _exit(process)
    await terminate_posix_process_tree(process, EXIT_GRACE)  # its whole group, even when the leader has exited
    await _exit(process)
    if process.returncode is None:
        _log.warning("MCP server process %d is still alive after SIGKILL; abandoning it", process.pid)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
    # anyio never closes asyncio's subprocess transport, which then warns (or fails, once the loop is closed) when
    # it is collected; nothing public reaches it, so walk the attributes as the SDK's stdio_client does.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError):  # re-killing a setuid child
            close()


async def _exit(process: Process) -> None:
    """Wait at most :data:`EXIT_GRACE` for the process to exit.

    It polls ``returncode``: ``wait()`` also waits for the end of its pipes, which a child it left running may
    hold open (the SDK waits the same way)."""
    with anyio.move_on_after(EXIT_GRACE):
        while process.returncode is None:  # noqa: ASYNC110 - see the docstring
            await anyio.sleep(_POLL)
