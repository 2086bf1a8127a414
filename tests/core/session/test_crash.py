"""Crash safety and the single-writer lock, with real processes.

* A child appends in a loop and is SIGKILLed at random moments, 200 times. After every kill the file must reopen
  (torn tail repaired) and hold every transaction the child reported as committed; the child reports a seq
  only after ``append`` returned, i.e. after the fsync. Each child starts by reopening the file, so recovery of
  an interrupted run (the planner's abort reconciliation) and appending after a repaired tail are exercised too;
  some torn tails are also injected on purpose between kills.
* Two processes race to open one session for writing: exactly one writes, the other gets SessionLockedError.
"""

from __future__ import annotations

import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.core.session.builders import Call, SessionScript, current_configuration
from tiny_agent_core.session import SessionStore, facts, plan_recovery, reduce_session

KILLS = 200
FILES = 10
ERROR = 2**64 - 1

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")


def _reconcile(store: SessionStore) -> None:
    """Finish whatever the last child left open, by aborting it the way the planner says."""
    state = store.state
    while state.operation.kind != "idle":
        operation: Any = state.operation
        if not operation.abort_requested:
            phase = "compact" if operation.kind == "compaction" else "model"
            store.append(
                facts.abort_requested(operation_id=operation.operation_id, operation_kind=operation.kind, phase=phase)
            )
            continue
        plan = plan_recovery(state, current_configuration())
        if plan["type"] == "closeAttempt":
            step = operation.step
            store.append(
                facts.step_failed(
                    operation_id=operation.operation_id,
                    step_id=step.step_id,
                    attempt_id=step.attempt_id,
                    code="aborted",
                    message="Operation aborted",
                )
            )
        elif plan["type"] == "appendSynthetic":
            for result in plan["results"]:
                step_id = operation.step.step_id
                if "toolStartedId" in result:
                    fact = facts.tool_result(
                        step_id=step_id,
                        tool_started_id=result["toolStartedId"],
                        result_entry_id=result["resultEntryId"],
                        tool_call_id=result["toolCallId"],
                        tool_name=result["toolName"],
                        content=result["content"],
                        result="interrupted",
                    )
                else:
                    fact = facts.synthetic_result(
                        step_id=step_id,
                        assistant_entry_id=result["assistantEntryId"],
                        tool_index=result["toolIndex"],
                        tool_call_id=result["toolCallId"],
                        tool_name=result["toolName"],
                        reason=result["reason"],
                    )
                store.append(fact)
        else:
            assert plan == {"type": "finish", "outcome": "aborted"}, plan
            store.append(facts.operation_aborted(operation_id=operation.operation_id, operation_kind=operation.kind))


def _child(path: Path, report: int, seed: int) -> None:
    """Append forever; report each committed seq (after fsync) on the pipe."""
    rng = random.Random(seed)
    store = SessionStore.open(path)
    store.observe_commits(lambda committed: os.write(report, struct.pack("<Q", committed[-1]["seq"])))
    _reconcile(store)
    script = SessionScript(store=store, seed=seed)
    number = 0
    while True:
        number += 1
        size = rng.choice([10, 100, 1000, 10_000, 300_000]) if rng.random() < 0.3 else 50
        calls = [Call("read", '{"path":"a"}', "x" * size), Call("bash", '{"command":"ls"}', "é" * (size // 2), "error")]
        script.run(f"run {seed}.{number}", [calls, f"done {number}"])


def _read_reports(fd: int) -> list[int]:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    assert len(data) % 8 == 0
    return [value for (value,) in struct.iter_unpack("<Q", data)]


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_committed_transaction(tmp_path: Path) -> None:
    rng = random.Random(20261129)
    started = time.monotonic()
    paths: list[Path] = []
    committed_max = 0
    repaired = injected = 0
    for kill in range(KILLS):
        if kill % (KILLS // FILES) == 0:
            with SessionStore.create(tmp_path, model="test/model", environment="fixture") as store:
                paths.append(store.path)
            committed_max = 0
        path = paths[-1]
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            code = 0
            try:
                os.close(read_end)
                _child(path, write_end, seed=kill)
            except BaseException:
                os.write(write_end, struct.pack("<Q", ERROR))
                code = 1
            finally:
                os._exit(code)
        os.close(write_end)
        time.sleep(rng.uniform(0.0, 0.06))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        reports = _read_reports(read_end)
        os.close(read_end)
        assert ERROR not in reports, f"the child failed (kill {kill})"
        assert os.WIFSIGNALED(status)
        assert os.WTERMSIG(status) == signal.SIGKILL
        committed_max = max([committed_max, *reports])
        size = path.stat().st_size
        with SessionStore.open(path) as reopened:  # repairs a torn tail
            state = reopened.state
            if state.repaired_length != size:
                repaired += 1
            assert path.stat().st_size == state.repaired_length
            assert state.fact_count >= committed_max, f"kill {kill}: lost committed transactions"
        if rng.random() < 0.15:  # a torn write the kernel did not produce this time
            injected += 1
            with open(path, "ab") as handle:
                handle.write(json.dumps({"kind": "entry", "seq": state.next_seq})[: rng.randint(1, 30)].encode())
    for path in paths:
        state = reduce_session(path.read_bytes())
        assert state.fact_count > 0
    elapsed = time.monotonic() - started
    print(f"{KILLS} kills in {elapsed:.1f} s; {repaired} torn tails repaired, {injected} injected")
    assert elapsed < 60


CONTENDER = r"""
import json, sys
from tiny_agent_core.errors import SessionLockedError
from tiny_agent_core.session import SessionStore, facts
path = sys.argv[1]
print("ready", flush=True)  # imported: the race starts at "go", not at interpreter start-up
sys.stdin.readline()  # wait for "go"
try:
    store = SessionStore.open(path)
except SessionLockedError as error:
    print(json.dumps({"result": "locked", "message": str(error)}), flush=True)
    sys.exit(0)
store.append(facts.user_entry("from " + sys.argv[2]))
print(json.dumps({"result": "wrote"}), flush=True)
sys.stdin.readline()  # hold the lock until the test has seen both answers ("done", or end of input)
store.close()
"""


def test_two_processes_contend_for_one_session_and_exactly_one_writes(tmp_path: Path) -> None:
    with SessionStore.create(tmp_path, model="test/model", environment="fixture") as store:
        path = store.path
    contenders = [
        subprocess.Popen(
            [sys.executable, "-c", CONTENDER, str(path), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for process in contenders:  # both interpreters are up and waiting
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n", process.communicate(timeout=30)
    for process in contenders:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    lines = []
    for process in contenders:
        assert process.stdout is not None
        lines.append(json.loads(process.stdout.readline()))
    # While the winner holds the lock, reading works.
    with SessionStore.open(path, read_only=True) as reader:
        assert reader.state.fact_count in (0, 1)
    outputs = [process.communicate("done\n", timeout=30) for process in contenders]
    assert [process.returncode for process in contenders] == [0, 0], outputs
    assert sorted(line["result"] for line in lines) == ["locked", "wrote"]
    assert "open for writing elsewhere" in next(line["message"] for line in lines if line["result"] == "locked")
    state = reduce_session(path.read_bytes())
    assert state.fact_count == 1
