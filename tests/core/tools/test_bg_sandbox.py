"""bg in the sandbox, and the children of bg processes that leave the group: killed on stop and close."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.core.tools.sleepers import (
    MODES,
    assert_sleepers_gone,
    detached_sleepers,
    eventually,
    needs_sandbox,
    sleepers,
    unique_seconds,
)
from tests.core.tools.support import real
from tiny_agent_core.tools import BgTool


async def call(tool: BgTool, **args: Any) -> str:
    outcome = await tool.execute(args)
    assert not outcome.is_error, outcome.content
    return outcome.content


async def start(tool: BgTool, command: str) -> str:
    pid: str = json.loads((await call(tool, action="start", command=command)).split("\n", 1)[0])["id"]
    return pid


@needs_sandbox
async def test_a_sandboxed_process_has_no_keys_and_a_read_only_system(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    workspace = real(tmp_path)
    tool = BgTool(workspace, start_wait=0.05)
    assert tool.sandbox.available
    pid = await start(tool, "env; cat /proc/1/environ; touch /etc/tiny-agent-probe; echo ok > inside; echo end")
    await eventually(lambda: "end" in (workspace / ".tiny-agent" / "bg" / f"{pid}.log").read_text(), "no end")
    log = await call(tool, action="logs", id=pid, tail=2000)
    assert canary not in log
    assert "Read-only file system" in log
    assert (workspace / "inside").read_text() == "ok\n"
    await tool.close()


@needs_sandbox
async def test_a_sandboxed_process_gets_its_term_grace(tmp_path: Path) -> None:
    workspace = real(tmp_path)
    tool = BgTool(workspace, start_wait=0.05)
    pid = await start(tool, "trap 'sleep 0.3; echo got TERM; exit 0' TERM; echo ready > ready; sleep 1000 & wait")
    await eventually(lambda: (workspace / "ready").exists(), "the process never started")
    stopped = json.loads(await call(tool, action="stop", id=pid))
    assert stopped["status"] == "stopped"
    assert "got TERM" in (await call(tool, action="logs", id=pid)).splitlines()  # a line, not the header


@pytest.mark.parametrize("sandbox", MODES)
@pytest.mark.parametrize("ending", ["stop", "close"])
async def test_detached_children_die_with_the_process(sandbox: bool, ending: str, tmp_path: Path) -> None:
    workspace = real(tmp_path)
    seconds = unique_seconds()
    tool = BgTool(workspace, sandbox=sandbox, start_wait=0.05, stop_grace=0.2)
    pid = await start(tool, detached_sleepers(seconds) + "echo up > started; sleep 1000")
    await eventually(lambda: (workspace / "started").exists(), "the process never started its sleepers")
    assert len(sleepers(seconds)) == 2
    if ending == "stop":
        assert json.loads(await call(tool, action="stop", id=pid))["status"] == "stopped"
    else:
        await tool.close()
    await assert_sleepers_gone(seconds)


@pytest.mark.parametrize("sandbox", MODES)
async def test_stopping_an_earlier_runs_process_kills_members_that_outlive_the_leader(
    sandbox: bool, tmp_path: Path
) -> None:
    # the members ignore SIGTERM and outlive their leader (sandboxed, bwrap exits on SIGTERM at once)
    workspace = real(tmp_path)
    seconds = unique_seconds()
    first = BgTool(workspace, sandbox=sandbox, start_wait=0.05)
    command = f"sh -c 'trap \"\" TERM; echo up > started; sleep {seconds}' & sleep 1000"
    pid = await start(first, command)
    await eventually(lambda: (workspace / "started").exists() and bool(sleepers(seconds)), "never started")
    later = BgTool(workspace, sandbox=sandbox, stop_grace=0.2)  # as after a restart: it did not start the process
    assert json.loads(await call(later, action="stop", id=pid))["status"] == "stopped"
    await assert_sleepers_gone(seconds)
    await first.close()
