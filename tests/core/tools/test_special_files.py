"""read, write, edit and their previews never block on a FIFO, refuse sockets and devices, and bound edit's size."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tiny_agent_core.tools import EditTool, ReadTool, Tool, WorkspaceGuard, WriteTool, builtin_tools
from tiny_agent_core.tools import edit as edit_module
from tiny_agent_core.tools.base import BuiltinTool, Preview
from tiny_agent_core.tools.edit import MAX_EDIT_FILE
from tiny_agent_core.tools.write import PREVIEW_MAX_FILE

T = TypeVar("T")

BOUND = 5.0
"""Seconds a call may take before the test fails (a regression blocks for ever; it must fail, not hang)."""

EDITS = [{"oldText": "a", "newText": "b"}]


def args_for(name: str, path: str) -> dict[str, Any]:
    if name == "read":
        return {"path": path}
    if name == "write":
        return {"path": path, "content": "x"}
    return {"path": path, "edits": EDITS}


def file_tools(workspace: Path, roots: tuple[str, ...] = ()) -> dict[str, BuiltinTool]:
    found: dict[str, Tool] = {tool.name: tool for tool in builtin_tools(workspace, allowed_roots=roots)}
    return {name: tool for name, tool in found.items() if isinstance(tool, ReadTool | WriteTool | EditTool)}


def release(fifo: Path) -> None:
    """Unblock whoever is stuck opening or reading ``fifo`` (so a failing test does not hang at exit)."""
    for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, flags))


async def within(awaitable: Awaitable[T], fifo: Path) -> T:
    try:
        return await asyncio.wait_for(awaitable, BOUND)
    except TimeoutError:
        release(fifo)
        pytest.fail(f"blocked on {fifo} for {BOUND} s")


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    yield path
    release(path)


@pytest.mark.parametrize("name", ["read", "write", "edit"])
async def test_a_fifo_is_refused_at_once(tmp_path: Path, fifo: Path, name: str) -> None:
    outcome = await within(file_tools(tmp_path)[name].execute(args_for(name, "pipe")), fifo)
    assert outcome.content == "Error: pipe is a FIFO (named pipe), not a regular file"
    assert fifo.is_fifo()


@pytest.mark.parametrize("name", ["write", "edit"])
async def test_the_preview_of_a_fifo_does_not_block(tmp_path: Path, fifo: Path, name: str) -> None:
    tool = file_tools(tmp_path)[name]
    preview = await within(asyncio.to_thread(tool.preview, args_for(name, "pipe")), fifo)
    assert preview == Preview("diff", "", error="pipe is a FIFO (named pipe), not a regular file")


async def test_a_fifo_behind_a_symlink_is_refused(tmp_path: Path, fifo: Path) -> None:
    (tmp_path / "notes.md").symlink_to(fifo)
    outcome = await within(file_tools(tmp_path)["read"].execute({"path": "notes.md"}), fifo)
    assert outcome.content == "Error: notes.md is a FIFO (named pipe), not a regular file"


@pytest.mark.parametrize("name", ["read", "write", "edit"])
async def test_a_socket_is_refused(tmp_path: Path, name: str) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "sock"))
        outcome = await file_tools(tmp_path)[name].execute(args_for(name, "sock"))
        preview = file_tools(tmp_path)[name].preview(args_for(name, "sock"))
    assert outcome.content == "Error: sock is a socket, not a regular file"
    assert name == "read" or (preview is not None and preview.error == "sock is a socket, not a regular file")


@pytest.mark.parametrize("name", ["read", "write", "edit"])
async def test_devices_are_refused_even_in_an_allowed_root(tmp_path: Path, name: str) -> None:
    tools = file_tools(tmp_path, roots=("/dev",))
    for device in ("/dev/zero", "/dev/null"):
        outcome = await asyncio.wait_for(tools[name].execute(args_for(name, device)), BOUND)
        assert outcome.content == f"Error: {device} is a character device, not a regular file"
    (tmp_path / "zero").symlink_to("/dev/zero")
    outcome = await asyncio.wait_for(tools[name].execute(args_for(name, "zero")), BOUND)
    assert outcome.content == "Error: zero is a character device, not a regular file"


async def test_edit_refuses_a_file_over_the_limit_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    with big.open("wb") as file:
        file.truncate(MAX_EDIT_FILE + 1)  # sparse: no disk used
    tool = file_tools(tmp_path)["edit"]
    outcome = await asyncio.wait_for(tool.execute({"path": "big.log", "edits": EDITS}), BOUND)
    assert outcome.content == f"Error: big.log is too large to edit (more than {MAX_EDIT_FILE:,} bytes)."
    preview = tool.preview({"path": "big.log", "edits": EDITS})
    assert preview is not None
    assert preview.error == f"big.log is too large to preview (more than {PREVIEW_MAX_FILE:,} bytes)."
    assert big.stat().st_size == MAX_EDIT_FILE + 1


async def test_edit_limit_is_inclusive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edit_module, "MAX_EDIT_FILE", 10)
    tool = EditTool(WorkspaceGuard(tmp_path))
    (tmp_path / "f.txt").write_text("a23456789\n")  # 10 bytes
    assert (await tool.execute({"path": "f.txt", "edits": EDITS})).content == (
        "Successfully replaced 1 block(s) in f.txt."
    )
    (tmp_path / "f.txt").write_text("a234567890\n")
    outcome = await tool.execute({"path": "f.txt", "edits": EDITS})
    assert outcome.content == "Error: f.txt is too large to edit (more than 10 bytes)."
    assert (tmp_path / "f.txt").read_text() == "a234567890\n"
