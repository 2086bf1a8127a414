"""Recovery of sessions left open by a crash: retry once, replay only read, interrupt the rest, or block."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.agent.conftest import Harness, make_agent, text_reply, tool_reply
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.errors import RecoveryBlockedError
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.session.reducer import SYNTHETIC_CONTENT, reduce_session
from tiny_agent_core.session.store import SessionStore

ROOT = Path(__file__).resolve().parents[3]


async def _wait_for(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def _crash(harness: Harness, until: object, *, resume: bool = False) -> Path:
    """Run a prompt (or a recovery) and cancel the task once ``until()`` holds: like a crash, nothing more is
    written."""
    task = asyncio.create_task(harness.agent.resume() if resume else harness.agent.run("go"))
    await _wait_for(until)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    harness.store.close()
    return harness.store.path


def _reopen(path: Path, workspace: Path, server: LoopbackServer, http: ProviderClient, **kwargs: object) -> Harness:
    return make_agent(workspace, server, http, store=SessionStore.open(path), **kwargs)  # type: ignore[arg-type]


def _stalled_text() -> Reply:
    chunk = {"choices": [{"index": 0, "delta": {"content": "partial"}, "finish_reason": None}]}
    return Reply.sse(sse_events([chunk]), stall_after=1, stall=30)


async def test_an_open_attempt_is_retried_once(
    harness: Harness, workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    server.queue(_stalled_text())
    path = await _crash(harness, lambda: len(harness.events) >= 3)
    assert reduce_session(path.read_bytes()).operation.step.status == "attempting"  # type: ignore[union-attr]
    server.queue(text_reply("recovered"))
    again = _reopen(path, workspace, server, http)
    result = await again.agent.resume()
    assert result is not None
    assert (result.outcome, result.answer) == ("completed", "recovered")
    attempts = [r["attempt"] for r in again.records_of("stepAttempt")]
    assert attempts == [1, 2]
    assert await again.agent.resume() is None  # idempotent: nothing left to do
    again.store.close()


async def test_a_second_open_attempt_exhausts_into_failure(
    harness: Harness, workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    server.queue(_stalled_text())
    path = await _crash(harness, lambda: len(harness.events) >= 3)
    server.queue(_stalled_text())
    second = _reopen(path, workspace, server, http)
    await _crash(second, lambda: server.wait_for_requests(2, 0), resume=True)
    third = _reopen(path, workspace, server, http)
    result = await third.agent.resume()
    assert result is not None
    assert result.outcome == "failed"
    assert third.records_of("operationFinished")[-1]["error"] == {
        "code": "model_error",
        "message": "provider request attempts exhausted",
    }
    assert len(server.requests) == 2  # no third provider call
    third.store.close()


async def test_a_started_bash_is_interrupted_not_replayed(
    harness: Harness, workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    marker = workspace / "count"
    server.queue(tool_reply(("b1", "bash", f'{{"command": "echo x >> {marker}; sleep 30"}}')))
    path = await _crash(harness, lambda: marker.exists())
    server.queue(text_reply("ok, it was interrupted"))
    again = _reopen(path, workspace, server, http)
    result = await again.agent.resume()
    assert result is not None
    assert result.outcome == "completed"
    assert marker.read_text() == "x\n"  # never run twice
    assert {
        "role": "tool",
        "content": SYNTHETIC_CONTENT["interrupted"],
        "tool_call_id": "b1",
    } in again.reduced().transcript
    again.store.close()


async def test_a_started_read_is_replayed(
    harness: Harness, workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    (workspace / "f.txt").write_text("content\n")
    server.queue(tool_reply(("r1", "read", '{"path": "f.txt"}')))

    def started() -> bool:
        return bool(harness.records_of("toolStarted"))

    # Crash exactly between toolStarted and the result: hold the tool until the crash.
    read_tool = harness.agent.tools["read"]
    original = read_tool.execute

    async def slow(*args: object, **kwargs: object) -> object:
        await asyncio.sleep(30)
        return await original(*args, **kwargs)  # type: ignore[arg-type]

    read_tool.execute = slow  # type: ignore[method-assign]
    path = await _crash(harness, started)
    server.queue(text_reply("read it"))
    again = _reopen(path, workspace, server, http)
    result = await again.agent.resume()
    assert result is not None
    assert result.outcome == "completed"
    assert {"role": "tool", "content": "content", "tool_call_id": "r1"} in again.reduced().transcript
    assert len(again.records_of("toolStarted")) == 1  # replayed under the same toolStarted
    again.store.close()


async def test_a_changed_configuration_blocks_and_can_be_abandoned(
    harness: Harness, workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    server.queue(_stalled_text())
    path = await _crash(harness, lambda: len(harness.events) >= 3)
    other = _reopen(path, workspace, server, http, model="another-model")
    with pytest.raises(RecoveryBlockedError) as blocked:
        await other.agent.resume()
    assert blocked.value.reason == "configuration_changed"
    assert "Restore the previous configuration" in str(blocked.value)
    assert blocked.value.differences == (
        "model 'test-model' → 'another-model'",
        "provider 'custom:test-model' → 'custom:another-model'",
    )
    assert "what differs: model 'test-model' → 'another-model'" in str(blocked.value)
    result = await other.agent.abandon()
    assert result.outcome == "aborted"
    assert other.reduced().operation.kind == "idle"
    other.store.close()


@pytest.mark.parametrize("phase", ["streaming", "bash"])
async def test_sigkill_of_a_child_process_then_recovery(
    phase: str, workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    marker = workspace / "ran"
    if phase == "streaming":
        server.queue(_stalled_text())
    else:
        server.queue(tool_reply(("b1", "bash", f'{{"command": "touch {marker}; sleep 60"}}')))
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.core.agent.child_run", str(workspace), server.base_url, "go"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert child.stdout is not None
        path = Path(child.stdout.readline().strip())
        if phase == "streaming":
            await _wait_for(lambda: server.wait_for_requests(1, 0))
            await asyncio.sleep(0.2)
        else:
            await _wait_for(marker.exists)
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert reduce_session(path.read_bytes()).operation.kind == "run"
    server.queue(text_reply("recovered"))
    again = _reopen(path, workspace, server, http)
    result = await again.agent.resume()
    assert result is not None
    assert result.outcome == "completed"
    assert again.reduced().operation.kind == "idle"
    again.store.close()
