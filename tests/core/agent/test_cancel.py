"""Cancel (Esc): abortRequested is durable first, the stream or tool is cancelled, and the run is idle again."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from tests.core.agent.conftest import Harness, text_reply, tool_reply
from tests.loopback import Reply, sse_events
from tiny_agent_core.session.reducer import SYNTHETIC_CONTENT


async def _wait_for(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_cancel_during_streaming_closes_the_stream_and_aborts(harness: Harness) -> None:
    chunks = [{"choices": [{"index": 0, "delta": {"content": f"t{i} "}, "finish_reason": None}]} for i in range(5)]
    harness.server.queue(Reply.sse(sse_events(chunks), stall_after=2, stall=30))
    task = asyncio.create_task(harness.agent.run("go"))
    await _wait_for(lambda: any(type(e).__name__ == "TextDelta" for e in harness.events))
    started = time.monotonic()
    assert await harness.agent.abort()
    result = await task
    elapsed = time.monotonic() - started
    assert result.outcome == "aborted"
    assert elapsed < 2.0  # the target is 200 ms; the bound here only catches a hang
    assert harness.server.requests[0].wait_closed(5)
    records = [r["type"] for r in harness.records_of_all()]
    assert records[-3:] == ["abortRequested", "stepFailed", "operationFinished"]
    assert harness.records_of("abortRequested")[0]["phase"] == "model"
    assert harness.records_of("stepFailed")[0]["error"] == {"code": "aborted", "message": "Operation aborted"}
    assert harness.reduced().operation.kind == "idle"
    assert not await harness.agent.abort()  # nothing left to abort


async def test_cancel_during_bash_kills_the_process_group(harness: Harness) -> None:
    # A unique duration names the sleeper on the host: inside the sandbox's PID namespace, $! is not a host pid.
    duration = f"300.{uuid.uuid4().int % 10**9}"
    harness.server.queue(
        tool_reply(("b1", "bash", f'{{"command": "sleep {duration} & wait"}}'), ("r1", "read", '{"path": "x"}')),
    )
    task = asyncio.create_task(harness.agent.run("go"))
    await _wait_for(lambda: _processes_running("sleep", duration))
    assert await harness.agent.abort()
    result = await task
    assert result.outcome == "aborted"
    assert harness.records_of("abortRequested")[0] == {
        "type": "abortRequested",
        "operationId": harness.records_of("runStarted")[0]["operationId"],
        "operationKind": "run",
        "phase": "tool",
        "toolCallId": "b1",
        "reason": "escape",
    }
    transcript = harness.reduced().transcript
    assert transcript[-2:] == [
        {"role": "tool", "content": SYNTHETIC_CONTENT["interrupted"], "tool_call_id": "b1"},
        {"role": "tool", "content": SYNTHETIC_CONTENT["aborted"], "tool_call_id": "r1"},
    ]
    await _wait_for(lambda: not _processes_running("sleep", duration), timeout=5)


def _processes_running(*argv: str) -> bool:
    """Whether a live (not zombie) process on this host runs exactly ``argv``."""
    wanted = "\0".join(argv).encode() + b"\0"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "cmdline").read_bytes() == wanted and " Z " not in (entry / "stat").read_text():
                return True
        except OSError:
            continue
    return False


async def test_cancel_while_waiting_for_approval_aborts_the_unstarted_call(harness: Harness) -> None:
    class Waiting:
        async def ask(self, request: object) -> object:
            await asyncio.sleep(60)
            raise AssertionError("unreachable")

    harness.agent.approver = Waiting()  # type: ignore[assignment]
    harness.server.queue(tool_reply(("w1", "write", '{"path": "a", "content": "b"}')))
    task = asyncio.create_task(harness.agent.run("go"))
    await _wait_for(lambda: any(type(e).__name__ == "ApprovalNeeded" for e in harness.events))
    assert await harness.agent.abort()
    assert (await task).outcome == "aborted"
    assert harness.records_of("toolStarted") == []
    assert harness.reduced().transcript[-1]["content"] == SYNTHETIC_CONTENT["aborted"]


async def test_a_completed_run_is_not_abortable(harness: Harness) -> None:
    harness.server.queue(text_reply("done"))
    await harness.agent.run("go")
    assert not await harness.agent.abort()
