"""bg: start, list, status, logs and stop on short commands, with metadata in .tiny-agent/bg/."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.core.tools.support import assert_group_gone, live_members, real, subreaper, wait_for_file
from tiny_agent_core.tools import BgTool, ToolError
from tiny_agent_core.tools.bg import _kill_group, _process_started_at

META_KEYS = ["id", "command", "cwd", "pid", "pgid", "ownerPid", "startedAt", "processStartedAt", "log", "status"]


@pytest.fixture(autouse=True)
def reap_orphans() -> Iterator[None]:
    with subreaper():
        yield


@pytest.fixture
async def bg(tmp_path: Path) -> AsyncIterator[BgTool]:
    tool = BgTool(real(tmp_path), sandbox=False, start_wait=0.2)
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
    tool = BgTool(real(tmp_path), sandbox=False, start_wait=0.05)
    pid = json.loads(await call(tool, action="start", command="sleep 1000"))["id"]
    await tool.close()
    assert json.loads((tmp_path / ".tiny-agent" / "bg" / f"{pid}.json").read_text())["status"] == "stopped"
    await assert_group_gone(int(pid))


async def test_process_from_an_earlier_run_is_seen_and_stopped(bg: BgTool, tmp_path: Path) -> None:
    pid = json.loads(await call(bg, action="start", command="sleep 1000"))["id"]
    later = BgTool(real(tmp_path), sandbox=False)  # as after a restart: it did not start the process
    assert json.loads(await call(later, action="list"))[0]["id"] == pid
    assert json.loads(await call(later, action="stop", id=pid))["status"] == "stopped"
    await assert_group_gone(int(pid))


async def test_stale_pid_is_never_signalled(bg: BgTool, tmp_path: Path) -> None:
    pid = json.loads(await call(bg, action="start", command="sleep 1000"))["id"]
    meta_path = tmp_path / ".tiny-agent" / "bg" / f"{pid}.json"
    later = BgTool(real(tmp_path), sandbox=False)
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
    foreign = BgTool(other.resolve(), sandbox=False, start_wait=0.05)
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


# -- forged metadata: a process this tool did not start is signalled only when it provably is what bg started ----

REAL_KILL = os.kill
Calls = list[tuple[str, int, int]]


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start ``sleep`` processes that bg did not start (in their own group, or in ours); killed afterwards."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*, own_group: bool = True) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(["sleep", "1000"], start_new_session=own_group)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            REAL_KILL(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture
def signals(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Record every ``os.killpg`` / ``os.kill`` call. Nothing is delivered, except ``kill(pid, 0)`` probes."""
    calls: Calls = []

    def fake_killpg(pgid: int, signum: int) -> None:
        calls.append(("killpg", pgid, signum))

    def fake_kill(pid: int, signum: int) -> None:
        calls.append(("kill", pid, signum))
        if signum == 0 and pid > 1:
            REAL_KILL(pid, 0)

    monkeypatch.setattr(os, "killpg", fake_killpg)
    monkeypatch.setattr(os, "kill", fake_kill)
    return calls


def sent(calls: Calls) -> Calls:
    """The calls that deliver a signal (everything but ``kill(pid, 0)`` probes)."""
    return [call for call in calls if call[0] == "killpg" or call[2] != 0]


def forge(workspace: Path, name: int, **fields: Any) -> Path:
    """A metadata file as a model could write it, describing process ``name`` unless ``fields`` say otherwise."""
    pid = fields.get("pid", name)
    meta = {
        "id": str(name),
        "command": "sleep 1000",
        "cwd": str(real(workspace)),
        "pid": pid,
        "pgid": pid,
        "ownerPid": 1,
        "startedAt": "2026-01-01T00:00:00.000Z",
        "processStartedAt": _process_started_at(pid) if isinstance(pid, int) and pid > 1 else "",
        "log": f".tiny-agent/bg/{name}.log",
        "status": "running",
        **fields,
    }
    directory = workspace / ".tiny-agent" / "bg"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(meta))
    return path


@pytest.mark.parametrize(
    "forgery",
    [
        {"pgid": 1},  # killpg(1) is kill(-1): every process of the user
        {"pgid": 0},  # killpg(0): the caller's own group
        {"pgid": -1},
        {"pgid": "foreign"},  # some other live group (the test runner's)
        {"pgid": "1"},
        {"pgid": None},  # was: `meta.get("pgid") or pid`
        {"pgid": True},
        {"pid": "other"},  # the file names one process, the metadata another
        {"id": "other"},
    ],
)
async def test_forged_metadata_is_refused_and_nothing_is_signalled(
    bg: BgTool, tmp_path: Path, spawn: Callable[..., subprocess.Popen[bytes]], signals: Calls, forgery: dict[str, Any]
) -> None:
    leader = spawn()
    other = spawn()
    values = {"foreign": os.getpgrp(), "other": other.pid}
    fields = {key: values.get(value, value) if isinstance(value, str) else value for key, value in forgery.items()}
    if fields.get("id") == other.pid:
        fields["id"] = str(other.pid)
    if "pid" in fields:
        fields["processStartedAt"] = _process_started_at(other.pid)  # the start time matches the named process
    forge(tmp_path, leader.pid, **fields)
    message = await error(bg, action="stop", id=str(leader.pid))
    assert message.startswith(f"Error: refusing to stop bg {leader.pid}: "), message
    assert message.endswith("no signal was sent")
    assert sent(signals) == []
    assert all(pid > 1 for _, pid, _ in signals)
    assert leader.poll() is None
    assert other.poll() is None


async def test_forged_metadata_for_init_is_refused(bg: BgTool, tmp_path: Path, signals: Calls) -> None:
    forge(tmp_path, 1, pid=1, pgid=1, processStartedAt=_process_started_at(os.getpid()))
    assert (await error(bg, action="stop", id="1")).startswith("Error: refusing to stop bg 1: ")
    assert json.loads(await call(bg, action="list", status="all"))[0]["status"] == "stale"
    assert sent(signals) == []
    assert all(pid > 1 for _, pid, _ in signals)  # not even a kill(1, 0) probe


async def test_process_that_is_not_a_group_leader_is_refused(
    bg: BgTool, tmp_path: Path, spawn: Callable[..., subprocess.Popen[bytes]], signals: Calls
) -> None:
    member = spawn(own_group=False)  # in the test runner's group: killpg(member.pid) would miss, kill would not
    forge(tmp_path, member.pid)
    message = await error(bg, action="stop", id=str(member.pid))
    assert "is not the leader of its process group" in message
    assert sent(signals) == []
    assert member.poll() is None


async def test_foreign_process_with_another_start_time_is_not_signalled(
    bg: BgTool, tmp_path: Path, spawn: Callable[..., subprocess.Popen[bytes]], signals: Calls
) -> None:
    leader = spawn()
    forge(tmp_path, leader.pid, processStartedAt="Thu Jan  1 00:00:00 1970")
    assert json.loads(await call(bg, action="stop", id=str(leader.pid)))["status"] == "stale"
    assert sent(signals) == []
    assert leader.poll() is None


async def test_foreign_process_that_checks_out_gets_term_then_kill_on_its_group(
    tmp_path: Path, spawn: Callable[..., subprocess.Popen[bytes]], signals: Calls
) -> None:
    tool = BgTool(real(tmp_path), sandbox=False, stop_grace=0.1)
    leader = spawn()
    forge(tmp_path, leader.pid)
    stopped = json.loads(await call(tool, action="stop", id=str(leader.pid)))
    assert stopped["status"] == "stopped"
    assert sent(signals) == [("killpg", leader.pid, signal.SIGTERM), ("killpg", leader.pid, signal.SIGKILL)]


def test_kill_group_refuses_low_groups_and_never_signals_a_bare_pid(
    spawn: Callable[..., subprocess.Popen[bytes]], signals: Calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    for group in (1, 0, -1, -5):
        with pytest.raises(ToolError, match="refusing to signal process group"):
            _kill_group(group, signal.SIGKILL)
    assert signals == []

    def gone(pgid: int, signum: int) -> None:
        signals.append(("killpg", pgid, signum))
        raise ProcessLookupError

    monkeypatch.setattr(os, "killpg", gone)
    process = spawn(own_group=False)  # a live pid that is not a group: the old fallback would have killed it
    _kill_group(process.pid, signal.SIGKILL)
    assert signals == [("killpg", process.pid, signal.SIGKILL)]
    assert process.poll() is None


async def test_metadata_that_is_a_fifo_a_link_or_huge_is_not_read(bg: BgTool, tmp_path: Path) -> None:
    folder = tmp_path / ".tiny-agent" / "bg"
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "4242.json")  # a repository's FIFO: reading it would wait for a writer forever
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text(json.dumps({"id": "4343", "cwd": str(tmp_path), "status": "exited"}))
    (folder / "4343.json").symlink_to(outside)
    (folder / "4444.json").write_text(json.dumps({"cwd": str(tmp_path), "pad": "x" * 70_000}))
    for pid in ("4242", "4343", "4444"):
        assert "metadata is unreadable" in await error(bg, action="status", id=pid)
    assert json.loads(await call(bg, action="list", status="all")) == []
