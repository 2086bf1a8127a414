"""Time from Esc (``Agent.abort()``) to the agent being idle again, during streaming and during ``bash`` (SPEC §6).

    .venv/bin/python benchmarks/agent_cancel.py [--tries 20]

Each try runs a prompt in a fresh session against the loopback server: either the model stream stalls after its
first delta, or the model calls ``bash`` with a command that sleeps (and forks a sleeper). Once the stall (or the
command) is under way, ``abort()`` is called; the time until ``run()`` returns — ``abortRequested`` fsynced, the
stream or process group gone, the synthetic results and ``operationFinished`` committed — is the cancel latency.
Prints one JSON object per phase with the median, p90 and max in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from benchmarks.deadline import exit_after
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.agent.events import AgentEvent, TextDelta, ToolStarted
from tiny_agent_core.agent.loop import Agent
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.tools.approval import AllowListApprover, ApprovalPolicy, ToolSettings
from tiny_agent_core.tools.registry import builtin_tools


def _stalled_stream() -> Reply:
    chunk = {"choices": [{"index": 0, "delta": {"content": "thinking"}, "finish_reason": None}]}
    return Reply.sse(sse_events([chunk]), stall_after=1, stall=60)


def _bash_call() -> Reply:
    call = {"index": 0, "id": "b1", "type": "function", "function": {"name": "bash", "arguments": ""}}
    args = {"index": 0, "function": {"arguments": json.dumps({"command": "sleep 60 & sleep 60"})}}
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [args]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    return Reply.sse(sse_events(chunks))


async def _one(phase: str, server: LoopbackServer, client: ProviderClient, root: Path) -> float:
    workspace = Path(tempfile.mkdtemp(dir=root))
    store = SessionStore.create(workspace, model="m", provider="custom")
    ready = asyncio.Event()

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, TextDelta if phase == "streaming" else ToolStarted):
            ready.set()

    agent = Agent(
        store=store,
        client=client,
        profile=custom_profile(server.base_url),
        model="m",
        workspace=workspace,
        tools=builtin_tools(workspace),
        policy=ApprovalPolicy(ToolSettings.in_memory()),
        approver=AllowListApprover(["bash"]),
        on_event=on_event,
    )
    server.queue(_stalled_stream() if phase == "streaming" else _bash_call())
    task = asyncio.create_task(agent.run("go"))
    await ready.wait()
    await asyncio.sleep(0.05)  # let the stall / the command get under way
    started = time.perf_counter()
    await agent.abort()
    result = await task
    elapsed = (time.perf_counter() - started) * 1000
    assert result.outcome == "aborted", result
    store.close()
    return elapsed


async def main(tries: int) -> None:
    with LoopbackServer() as server, tempfile.TemporaryDirectory() as root:
        async with ProviderClient(httpx.AsyncClient(trust_env=False)) as client:
            for phase in ("streaming", "bash"):
                samples = [await _one(phase, server, client, Path(root)) for _ in range(tries)]
                samples.sort()
                print(
                    json.dumps(
                        {
                            "phase": phase,
                            "tries": tries,
                            "medianMs": round(statistics.median(samples), 2),
                            "p90Ms": round(samples[int(0.9 * (len(samples) - 1))], 2),
                            "maxMs": round(samples[-1], 2),
                        }
                    )
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=20)
    tries = parser.parse_args().tries
    exit_after(120 + 10 * tries, "agent_cancel")
    asyncio.run(main(tries))
