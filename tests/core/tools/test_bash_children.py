"""bash: children that leave the command's process group (``setsid``, a double-forked daemon) die on exit,
timeout and cancel, sandboxed (the PID namespace) and unsandboxed (the subreaper and run marker); a process of
ours that the command did not start is left alone."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.core.tools.sleepers import (
    MODES,
    assert_sleepers_gone,
    detached_sleepers,
    eventually,
    sleepers,
    unique_seconds,
)
from tiny_agent_core.tools import BashTool, ToolAborted


async def run(tool: BashTool, command: str, **args: object) -> str:
    outcome = await tool.execute({"command": command, **args})
    assert not outcome.is_error, outcome.content
    return outcome.content


@pytest.mark.parametrize("sandbox", MODES)
async def test_detached_children_die_after_a_normal_exit(sandbox: bool, tmp_path: Path) -> None:
    seconds = unique_seconds()
    text = await run(BashTool(tmp_path, sandbox=sandbox), detached_sleepers(seconds) + "echo started", timeout=60)
    assert text == "started\n"
    await assert_sleepers_gone(seconds)


@pytest.mark.parametrize("sandbox", MODES)
async def test_detached_children_die_on_timeout(sandbox: bool, tmp_path: Path) -> None:
    seconds = unique_seconds()
    command = detached_sleepers(seconds) + "echo started; sleep 1000"
    text = await run(BashTool(tmp_path, sandbox=sandbox), command, timeout=3)
    assert text == "started\n\n\nCommand timed out after 3 seconds."
    await assert_sleepers_gone(seconds)


@pytest.mark.parametrize("sandbox", MODES)
async def test_detached_children_die_on_task_cancel(sandbox: bool, tmp_path: Path) -> None:
    seconds = unique_seconds()
    command = detached_sleepers(seconds) + "echo up > started; sleep 1000"
    task = asyncio.create_task(BashTool(tmp_path, sandbox=sandbox).execute({"command": command}))
    await eventually(lambda: (tmp_path / "started").exists(), "the command never started its sleepers")
    assert len(sleepers(seconds)) == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_sleepers_gone(seconds)


@pytest.mark.parametrize("sandbox", MODES)
async def test_detached_children_die_on_cancel_event(sandbox: bool, tmp_path: Path) -> None:
    seconds = unique_seconds()
    cancel = asyncio.Event()
    command = detached_sleepers(seconds) + "echo up > started; sleep 1000"
    task = asyncio.create_task(BashTool(tmp_path, sandbox=sandbox).execute({"command": command}, cancel=cancel))
    await eventually(lambda: (tmp_path / "started").exists(), "the command never started its sleepers")
    cancel.set()
    with pytest.raises(ToolAborted):
        await task
    await assert_sleepers_gone(seconds)


async def test_a_process_of_ours_the_command_did_not_start_survives(tmp_path: Path) -> None:
    seconds = unique_seconds()
    ours = subprocess.Popen(["sleep", seconds], start_new_session=True)
    try:
        assert await run(BashTool(tmp_path, sandbox=False), "sleep 1000 & echo done") == "done\n"
        assert ours.poll() is None
        assert sleepers(seconds) == [ours.pid]
    finally:
        ours.kill()
        ours.wait(timeout=10)
