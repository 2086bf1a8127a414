"""A compare run: one prompt, two models on two loopback servers, each in its own copy of the workspace."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.core.agent.conftest import text_reply, tool_reply
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.compare import CompareRun, Contender
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.session import reduce_session


def _edit(new: str) -> Reply:
    arguments = json.dumps({"path": "greet.py", "edits": [{"oldText": "hi", "newText": new}]})
    return tool_reply(("e1", "edit", arguments))


async def test_two_models_edit_their_own_copies_and_the_original_stays(workspace: Path, http: ProviderClient) -> None:
    (workspace / "greet.py").write_text("print('hi')\n")
    with LoopbackServer() as first, LoopbackServer() as second:
        first.queue(_edit("hello"), text_reply("changed to hello"))
        second.queue(_edit("hey"), tool_reply(("b1", "bash", '{"command": "true"}')), text_reply("changed to hey"))
        contenders = [
            Contender(custom_profile(first.base_url, name="First"), "model-a"),
            Contender(custom_profile(second.base_url, name="Second"), "model-b"),
        ]
        changed: list[int] = []
        run = CompareRun(
            workspace, "say hello", contenders, folder=workspace.parent / "data", client=http, on_change=changed.append
        )
        reports = await run.run()

    assert (workspace / "greet.py").read_text() == "print('hi')\n"
    assert not (workspace / ".tiny-agent").exists()
    assert [r.status for r in reports] == ["completed", "completed"]
    assert [r.answer for r in reports] == ["changed to hello", "changed to hey"]
    a, b = reports
    assert a.copy is not None
    assert b.copy is not None
    assert a.copy.path != b.copy.path
    assert (a.copy.path / "greet.py").read_text() == "print('hello')\n"
    assert (b.copy.path / "greet.py").read_text() == "print('hey')\n"
    assert [(c.path, c.status) for c in a.changes] == [("greet.py", "modified")]
    assert "+print('hey')" in (b.changes[0].diff or "")
    assert (a.requests, b.requests) == (2, 3)
    assert dict(a.tools) == {"ok": 1}
    assert dict(b.tools) == {"ok": 1, "denied": 1}  # bash is not allowed without asking
    assert a.usage is not None
    assert a.usage.input == 30
    assert a.unknown_usage == 0
    assert a.cost == 0  # a loopback server: local, no API charge (not unknown)
    assert a.unknown_cost == 0
    assert a.wall_ms is not None
    assert a.wall_ms > 0
    for report in reports:  # each run is a normal session in its copy
        assert report.session_path is not None
        assert report.session_path.is_relative_to(report.copy.path)
        state = reduce_session(report.session_path.read_bytes())
        assert state.operation.kind == "idle"
        assert state.header.model == report.contender.model
    assert set(changed) == {0, 1}


async def test_cancel_stops_every_run(workspace: Path, http: ProviderClient) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "slow "}, "finish_reason": None}]}
    with LoopbackServer() as first, LoopbackServer() as second:
        for server in (first, second):
            server.queue(Reply.sse(sse_events([chunk]), stall_after=1, stall=30))
        servers = (first, second)
        contenders = [Contender(custom_profile(s.base_url, name=f"S{n}"), f"m{n}") for n, s in enumerate(servers)]
        run = CompareRun(workspace, "go", contenders, folder=workspace.parent / "data", client=http)
        task = asyncio.ensure_future(run.run())
        for server in servers:
            assert await asyncio.to_thread(server.wait_for_requests, 1, 5)
        run.cancel()
        reports = await asyncio.wait_for(task, 5)
    assert [r.status for r in reports] == ["aborted", "aborted"]
    assert not run.running


def test_a_compare_takes_two_to_four_models(workspace: Path) -> None:
    one = [Contender(custom_profile("http://127.0.0.1:1/v1"), "m")]
    with pytest.raises(ValueError, match="2 to 4"):
        CompareRun(workspace, "x", one, folder=workspace, client=None)  # type: ignore[arg-type]
