"""bg: start, list, status, logs and stop on short commands, with metadata in .tiny-agent/bg/."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.core.tools.support import assert_group_gone, live_members, real, subreaper, wait_for_file
from tiny_agent_core.tools import BgTool

META_KEYS = ["id", "command", "cwd", "pid", "pgid", "ownerPid", "startedAt", "processStartedAt", "log", "status"]


@pytest.fixture(autouse=True)
def reap_orphans() -> Iterator[None]:
    with subreaper():
        yield


@pytest.fixture
async def bg(tmp_path: Path) -> AsyncIterator[BgTool]:
    tool = BgTool(real(tmp_path), start_wait=0.2)
    yield tool
    await tool.close()


async def call(tool: BgTool, **args: Any) -> str:
    outcome = await tool.execute(args)
    assert not outcome.is_error, outcome.content
    return outcome.content


async def error(tool: BgTool, **args: Any) -> str:
    outcome = await tool.execute(args)
    assert outcome.is_error
    return outcome.content


async def wait_status(tool: BgTool, pid: str, status: str) -> dict[str, Any]:
    for _ in range(200):
        meta: dict[str, Any] = json.loads((await call(tool, action="status", id=pid)).split("\n", 1)[0])
        if meta["status"] == status:
            return meta
        await asyncio.sleep(0.02)
    raise AssertionError(f"bg {pid} never became {status}")


async def test_start_status_logs_stop(bg: BgTool, tmp_path: Path) -> None:
    started = json.loads(await call(bg, action="start", command="echo hello; echo oops >&2; sleep 30"))
    assert list(started) == META_KEYS
    pid = started["id"]
    assert started["pid"] == started["pgid"] == int(pid)
    assert started["cwd"] == str(real(tmp_path))
    assert started["ownerPid"] == os.getpid()
    assert started["status"] == "running"
    assert started["log"] == f".tiny-agent/bg/{pid}.log"
    assert started["processStartedAt"]
    on_disk = json.loads((tmp_path / ".tiny-agent" / "bg" / f"{pid}.json").read_text())
    assert on_disk == started

    log = (await call(bg, action="logs", id=pid)).split("\n")
    assert log[0] == "$ echo hello; echo oops >&2; sleep 30"
    assert log[1] == f"cwd: {real(tmp_path)}"
    assert log[2] == f"pid: {pid}"
    assert log[3].startswith("started: ")
    assert log[4:] == ["", "hello", "oops"]
    assert await call(bg, action="logs", id=pid, tail=1) == "oops"

    status = (await call(bg, action="status", id=pid, tail=2)).split("\n")
    assert json.loads(status[0])["status"] == "running"
    assert status[1:] == ["hello", "oops"]

    listed = json.loads(await call(bg, action="list"))
    assert [meta["id"] for meta in listed] == [pid]

    stopped = json.loads(await call(bg, action="stop", id=pid))
    assert stopped["status"] == "stopped"
    assert stopped["signal"] == "SIGTERM"
    assert "exitedAt" in stopped
    await assert_group_gone(int(pid))
    assert json.loads((tmp_path / ".tiny-agent" / "bg" / f"{pid}.json").read_text())["status"] == "stopped"
    assert json.loads(await call(bg, action="list")) == []
    assert [m["status"] for m in json.loads(await call(bg, action="list", status="all"))] == ["stopped"]
    assert json.loads(await call(bg, action="stop", id=pid))["status"] == "stopped"  # again: nothing to do
    footer = (await call(bg, action="logs", id=pid)).split("\n")
    assert footer[-3].startswith("exited: ")
    assert footer[-2:] == ["exitCode: ", "signal: SIGTERM"]


async def test_short_command_that_already_ended(bg: BgTool) -> None:
    text = await call(bg, action="start", command="echo done; exit 3")
    first, tail = text.split("\n", 1)
    meta = json.loads(first)
    assert meta["status"] == "exited"
    assert meta["exitCode"] == 3
    assert meta["signal"] is None
    assert tail.split("\n")[:5] == [
        "$ echo done; exit 3",
        f"cwd: {meta['cwd']}",
        f"pid: {meta['id']}",
        tail.split("\n")[3],
        "",
    ]
    assert tail.split("\n")[3].startswith("started: ")
    assert tail.split("\n")[5] == "done"
    exited = await wait_status(bg, meta["id"], "exited")
    assert exited["exitCode"] == 3
    assert [m["id"] for m in json.loads(await call(bg, action="list", status="exited"))] == [meta["id"]]
    assert json.loads(await call(bg, action="list", status="running")) == []


async def test_stop_kills_the_whole_group_even_when_term_is_ignored(bg: BgTool, tmp_path: Path) -> None:
    bg.stop_grace = 0.3
    command = "trap '' TERM; echo $$ > pgid; sh -c 'trap \"\" TERM; sleep 1000' & sleep 1000"
    pid = json.loads(await call(bg, action="start", command=command))["id"]
    pgid = int(await wait_for_file(tmp_path / "pgid"))
    assert pgid == int(pid)
    assert len(live_members(pgid)) >= 2
    stopped = json.loads(await call(bg, action="stop", id=pid))
    assert stopped["status"] == "stopped"
    assert stopped["signal"] == "SIGKILL"
    await assert_group_gone(pgid)


async def test_close_stops_what_the_tool_started(tmp_path: Path) -> None:
    tool = BgTool(real(tmp_path), start_wait=0.05)
    pid = json.loads(await call(tool, action="start", command="sleep 1000"))["id"]
    await tool.close()
    assert json.loads((tmp_path / ".tiny-agent" / "bg" / f"{pid}.json").read_text())["status"] == "stopped"
    await assert_group_gone(int(pid))


async def test_process_from_an_earlier_run_is_seen_and_stopped(bg: BgTool, tmp_path: Path) -> None:
    pid = json.loads(await call(bg, action="start", command="sleep 1000"))["id"]
    later = BgTool(real(tmp_path))  # as after a restart: it did not start the process
    assert json.loads(await call(later, action="list"))[0]["id"] == pid
    assert json.loads(await call(later, action="stop", id=pid))["status"] == "stopped"
    await assert_group_gone(int(pid))


async def test_stale_pid_is_never_signalled(bg: BgTool, tmp_path: Path) -> None:
    pid = json.loads(await call(bg, action="start", command="sleep 1000"))["id"]
    meta_path = tmp_path / ".tiny-agent" / "bg" / f"{pid}.json"
    later = BgTool(real(tmp_path))
    meta = json.loads(meta_path.read_text())
    meta["processStartedAt"] = "Thu Jan  1 00:00:00 1970"
    meta_path.write_text(json.dumps(meta))
    assert json.loads(await call(later, action="stop", id=pid))["status"] == "stale"
    assert live_members(int(pid))  # untouched
    assert [m["status"] for m in json.loads(await call(later, action="list", status="stale"))] == ["stale"]


async def test_errors(bg: BgTool, tmp_path: Path) -> None:
    assert await error(bg) == "Error: action must be a nonempty string"
    assert await error(bg, action="dance") == "Error: unknown bg action: dance"
    assert await error(bg, action="start") == "Error: command must be a nonempty string"
    assert await error(bg, action="list", status="zombie") == "Error: unknown bg status filter: zombie"
    assert await error(bg, action="status") == "Error: id must be a nonempty string"
    assert await error(bg, action="logs", id="../x") == "Error: id must be a pid"
    assert await error(bg, action="logs", id="12", tail=0) == "Error: tail must be an integer >= 1"
    assert await error(bg, action="stop", id="999999999") == "Error: no background process 999999999 in this workspace"
    assert json.loads(await call(bg, action="list")) == []

    other = tmp_path / "other"
    other.mkdir()
    foreign = BgTool(other.resolve(), start_wait=0.05)
    pid = json.loads((await call(foreign, action="start", command="true")).split("\n", 1)[0])["id"]
    (tmp_path / ".tiny-agent" / "bg").mkdir(parents=True, exist_ok=True)
    for suffix in (".json", ".log"):
        (tmp_path / ".tiny-agent" / "bg" / f"{pid}{suffix}").write_bytes(
            (other / ".tiny-agent" / "bg" / f"{pid}{suffix}").read_bytes()
        )
    assert await error(bg, action="status", id=pid) == f"Error: bg {pid} belongs to a different cwd"
    assert json.loads(await call(bg, action="list", status="all")) == []
    await foreign.close()


async def test_logs_without_output(bg: BgTool, tmp_path: Path) -> None:
    pid = json.loads((await call(bg, action="start", command="true")).split("\n", 1)[0])["id"]
    (tmp_path / ".tiny-agent" / "bg" / f"{pid}.log").write_text("")
    assert await call(bg, action="logs", id=pid) == "(no output)"
