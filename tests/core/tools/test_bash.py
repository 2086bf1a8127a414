"""bash, unsandboxed: its outputs, bounds and process-group handling (runaway output, forked sleepers, cancel,
timeout). The sandboxed runs are in test_bash_sandbox.py."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.tools.support import assert_group_gone, live_members, real, subreaper, text_of, wait_for_file
from tiny_agent_core.tools import BashTool, ToolAborted
from tiny_agent_core.tools.bash import CAP_LABEL, CAP_NOTE


@pytest.fixture(autouse=True)
def reap_orphans() -> Iterator[None]:
    with subreaper():
        yield


async def run(tmp_path: Path, command: str, **args: object) -> str:
    outcome = await BashTool(tmp_path, sandbox=False).execute({"command": command, **args})
    assert not outcome.is_error, outcome.content
    return outcome.content


async def test_stdout_then_stderr_in_the_workspace(tmp_path: Path) -> None:
    assert await run(tmp_path, "echo err >&2; echo out; pwd") == f"out\n{real(tmp_path)}\nerr\n"


async def test_stdin_is_empty(tmp_path: Path) -> None:
    assert await run(tmp_path, "cat; echo done", timeout=5) == "done\n"


async def test_signal_death_is_reported(tmp_path: Path) -> None:
    assert await run(tmp_path, "kill -9 $$") == "Command was killed by signal SIGKILL"


@pytest.mark.parametrize("value", [0, -1, "5", True, float("inf"), float("nan")])
async def test_timeout_must_be_positive(value: object, tmp_path: Path) -> None:
    outcome = await BashTool(tmp_path, sandbox=False).execute({"command": "true", "timeout": value})
    assert outcome.is_error
    assert outcome.content == "Error: timeout must be a positive number of seconds"


async def test_command_must_be_a_nonempty_string(tmp_path: Path) -> None:
    outcome = await BashTool(tmp_path, sandbox=False).execute({"command": ""})
    assert outcome.content == "Error: command must be a nonempty string"


async def test_integer_timeout_message(tmp_path: Path) -> None:
    started = time.monotonic()
    assert await run(tmp_path, "sleep 5", timeout=1) == "Command timed out after 1 seconds."
    assert time.monotonic() - started < 3


async def test_byte_truncation_keeps_a_utf8_tail(tmp_path: Path) -> None:
    # 30,000 two-byte characters on one line: 60,000 bytes, one line
    text = await run(tmp_path, "i=0; while [ $i -lt 3000 ]; do printf 'éééééééééé'; i=$((i+1)); done")
    tail, note = text.rsplit("\n\n", 1)
    assert len(tail.encode()) <= 51_200
    assert set(tail) == {"é"}
    assert note.startswith("[Showing lines 1-1 of 1. Full output: ")
    spilled = Path(note.removeprefix("[Showing lines 1-1 of 1. Full output: ").removesuffix("]"))
    assert text_of(spilled) == "é" * 30_000


async def test_forked_sleeper_dies_after_a_normal_exit(tmp_path: Path) -> None:
    started = time.monotonic()
    text = await run(tmp_path, "echo $$ > pgid; sleep 1000 & echo started")
    assert text == "started\n"
    assert time.monotonic() - started < 2  # the sleeper holding stdout did not keep the call open
    await assert_group_gone(int((tmp_path / "pgid").read_text()))


async def test_timeout_kills_the_group(tmp_path: Path) -> None:
    text = await run(tmp_path, "echo $$ > pgid; sleep 1000 & sleep 1000", timeout=0.2)
    assert text == "Command timed out after 0.2 seconds."
    await assert_group_gone(int((tmp_path / "pgid").read_text()))


async def test_runaway_output_is_capped_and_killed(tmp_path: Path) -> None:
    started = time.monotonic()
    text = await BashTool(tmp_path, sandbox=False, max_capture=2_000_000).execute_command(
        "echo $$ > pgid; sleep 1000 & yes", 30, None
    )
    assert time.monotonic() - started < 10
    tail, note = text.rsplit("\n\n", 1)
    assert tail.endswith(CAP_NOTE)
    assert f"{CAP_LABEL}: " in note
    assert len(text.encode()) < 52_000 + len(note)
    spilled = Path(note.split(f"{CAP_LABEL}: ", 1)[1].removesuffix("]"))
    assert len(text_of(spilled)) == 2_000_000 + len("\n\n" + CAP_NOTE)
    await assert_group_gone(int((tmp_path / "pgid").read_text()))


async def test_runaway_output_at_the_real_cap(tmp_path: Path) -> None:
    text = await run(tmp_path, "yes")
    assert text.endswith(f"of 5000003. {CAP_LABEL}: {text.rsplit(': ', 1)[1]}")
    assert f"y\n\n\n{CAP_NOTE}\n\n[Showing lines " in text


@pytest.mark.parametrize("command", ["yes > /dev/null", "sleep 1000 & sleep 1000", "while :; do echo y; done"])
async def test_cancel_is_prompt_and_kills_the_group(command: str, tmp_path: Path) -> None:
    task = asyncio.create_task(BashTool(tmp_path, sandbox=False).execute({"command": f"echo $$ > pgid; {command}"}))
    pgid = int(await wait_for_file(tmp_path / "pgid"))
    await asyncio.sleep(0.1)
    assert live_members(pgid)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 0.2
    await assert_group_gone(pgid)


async def test_cancel_event_aborts(tmp_path: Path) -> None:
    cancel = asyncio.Event()
    task = asyncio.create_task(
        BashTool(tmp_path, sandbox=False).execute({"command": "echo $$ > pgid; sleep 1000 & sleep 1000"}, cancel=cancel)
    )
    pgid = int(await wait_for_file(tmp_path / "pgid"))
    started = time.monotonic()
    cancel.set()
    with pytest.raises(ToolAborted, match="Operation aborted"):
        await task
    assert time.monotonic() - started < 0.2
    await assert_group_gone(pgid)


async def test_cancel_event_already_set(tmp_path: Path) -> None:
    cancel = asyncio.Event()
    cancel.set()
    with pytest.raises(ToolAborted):
        await BashTool(tmp_path, sandbox=False).execute({"command": "touch ran"}, cancel=cancel)
    assert not (tmp_path / "ran").exists()


async def test_escaped_daemon_does_not_hang_the_call(tmp_path: Path) -> None:
    # a grandchild that left the group and cleared its environment (so kill_tree cannot tell it is the command's)
    # keeps the pipe open; the call still returns, within the drain grace
    started = time.monotonic()
    text = await run(tmp_path, "setsid env -i sh -c 'echo $$ > daemon; sleep 1000' & echo hi; sleep 0.1")
    assert text == "hi\n"
    assert time.monotonic() - started < 2
    daemon = int(await wait_for_file(tmp_path / "daemon"))
    os.killpg(daemon, signal.SIGKILL)
    await assert_group_gone(daemon)


async def test_cap_passed_by_a_command_that_exits_at_once(tmp_path: Path) -> None:
    # stderr is written before stdout passes the cap: the group is killed at the cap, so anything the shell would
    # write after it may never be written (that ordering made this test flaky under load).
    text = await BashTool(tmp_path, sandbox=False, max_capture=1000).execute_command(
        "echo done >&2; printf '%02000d' 0", 5, None
    )
    assert text == "0" * 1000 + "done\n\n\n" + CAP_NOTE
