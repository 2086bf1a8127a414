"""Tool-call outcomes, summaries and diffs, derived from session files the real agent wrote (loopback provider)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.agent.conftest import Harness, make_agent, text_reply, tool_reply
from tests.loopback import LoopbackServer
from tiny_agent_core.agent.events import ToolStarted
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.timeline import Timeline, ToolItem
from tiny_agent_core.tool_outcomes import Outcome, call_diff, call_outcome, call_summary, output_shape
from tiny_agent_core.tools.approval import ApprovalAnswer, ApprovalRequest, Choice

EDIT = {"path": "greet.py", "edits": [{"oldText": '"Hello " + name', "newText": 'f"Hello, {name}!"'}]}


class _DenyWithoutReason:
    """An approver that allows ``read`` and ``bash`` and denies everything else without saying why."""

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        if request.tool_name in ("read", "bash"):
            return ApprovalAnswer(Choice.ALLOW_ONCE)
        return ApprovalAnswer.deny()


@pytest.fixture
def harness(workspace: Path, server: LoopbackServer, http: ProviderClient) -> Iterator[Harness]:
    (workspace / "cart.py").write_text("".join(f"line {n}\n" for n in range(360)))
    (workspace / "greet.py").write_text('def greet(name):\n    return "Hello " + name\n')
    made = make_agent(workspace, server, http, allow=("read", "bash", "edit"))
    yield made
    made.store.close()


def ending(outcome: Outcome | None) -> tuple[str, int | None, str | None]:
    """An outcome as ``(kind, exit code, reason)``."""
    assert outcome is not None
    return outcome.kind, outcome.exit_code, outcome.reason


def tools_of(harness: Harness) -> dict[str, ToolItem]:
    timeline = Timeline.from_bytes(harness.store.path.read_bytes())  # the durable session, reloaded
    return {item.call_id: item for item in timeline.items if isinstance(item, ToolItem)}


async def test_every_reference_result_form(harness: Harness) -> None:
    calls = [
        ("c_read", "read", '{"path": "cart.py"}'),
        ("c_missing", "read", '{"path": "nope.py"}'),
        ("c_exit", "bash", json.dumps({"command": "seq 1 400; echo boom >&2; exit 1"})),
        ("c_quiet", "bash", '{"command": "exit 3"}'),
        ("c_timeout", "bash", '{"command": "sleep 5", "timeout": 0.2}'),
        ("c_edit", "edit", json.dumps(EDIT)),
        ("c_denied", "write", '{"path": "x.txt", "content": "a\\nb\\n"}'),
        ("c_unknown", "frobnicate", "{}"),
        ("c_invalid", "read", "{not json"),
    ]
    harness.server.queue(tool_reply(*calls), text_reply("done"))
    result = await harness.agent.run("go")
    assert result.outcome == "completed"
    tools = tools_of(harness)

    read = tools["c_read"]
    assert ending(read.outcome) == ("ok", None, None)
    assert read.summary == "read cart.py · 360 lines"

    missing = tools["c_missing"]
    assert missing.status == "error"
    assert ending(missing.outcome)[0] == "error"
    assert missing.summary.startswith("read nope.py → error: ")

    failed = tools["c_exit"]
    assert failed.status == "success"  # what the file says: the adapter settled
    assert ending(failed.outcome) == ("exit", 1, None)
    assert failed.outcome is not None
    assert failed.outcome.label == "exit 1"
    assert failed.summary == "bash seq 1 400; echo boom >&2; exit 1 → exit 1 · 401 lines"

    quiet = tools["c_quiet"]
    assert ending(quiet.outcome) == ("exit", 3, None)
    assert quiet.summary == "bash exit 3 → exit 3 · no output"

    timeout = tools["c_timeout"]
    assert ending(timeout.outcome) == ("timeout", None, "0.2 s")
    assert timeout.summary == "bash sleep 5 → timed out after 0.2 s · no output"

    edit = tools["c_edit"]
    assert ending(edit.outcome) == ("ok", None, None)
    assert edit.summary == "edit greet.py +1 \u22121"
    assert edit.diff is not None
    assert '+f"Hello, {name}!"' in edit.diff.text
    assert edit.diff.text.count("\n-") == 1

    denied = tools["c_denied"]
    reason = "write is not allowed in this non-interactive run (allow it with --allow write)."
    assert ending(denied.outcome) == ("denied", None, reason)
    assert denied.summary == "denied: write x.txt"
    assert denied.diff is not None  # kept after the denial
    assert (denied.diff.added, denied.diff.removed) == (2, None)

    unknown = tools["c_unknown"]
    assert ending(unknown.outcome) == ("not_run", None, "unknown tool")
    invalid = tools["c_invalid"]
    assert ending(invalid.outcome) == ("not_run", None, "invalid arguments")
    assert invalid.summary == "read {not json → not run: invalid arguments"


async def test_denied_without_reason(workspace: Path, server: LoopbackServer, http: ProviderClient) -> None:
    harness = make_agent(workspace, server, http)
    harness.agent.approver = _DenyWithoutReason()
    try:
        command = "rm -rf build/ && git push --force origin main"
        harness.server.queue(
            tool_reply(
                ("c1", "edit", json.dumps(EDIT)), ("c2", "bg", json.dumps({"action": "start", "command": command}))
            ),
            text_reply("ok"),
        )
        await harness.agent.run("go")
        tools = tools_of(harness)
    finally:
        harness.store.close()
    assert ending(tools["c1"].outcome) == ("denied", None, None)
    assert tools["c1"].outcome is not None
    assert tools["c1"].outcome.description == "denied"
    assert tools["c2"].summary == f"denied: bg start {command}"


async def test_interrupted_when_the_run_is_cancelled_during_the_tool(harness: Harness) -> None:
    harness.server.queue(tool_reply(("c1", "bash", '{"command": "sleep 30"}')))
    task = asyncio.ensure_future(harness.agent.run("go"))
    async with asyncio.timeout(10):
        while not any(isinstance(event, ToolStarted) for event in harness.events):  # noqa: ASYNC110 - a list sink
            await asyncio.sleep(0.01)
    await harness.agent.abort()
    assert (await task).outcome == "aborted"
    tool = tools_of(harness)["c1"]
    assert tool.status == "interrupted"
    assert ending(tool.outcome) == ("interrupted", None, None)
    assert tool.summary == "bash sleep 30 → interrupted"


def test_truncated_bash_output_counts_every_line() -> None:
    text = "x\n" * 3 + "\nCommand exited with code 2\n\n[Showing lines 2000-2400 of 2400. Full output: /tmp/a.log]"
    outcome = call_outcome("bash", "success", text)
    assert ending(outcome) == ("exit", 2, None)
    assert output_shape("bash", text).lines == 2400
    assert call_summary("bash", {"command": "make"}, "", outcome, text) == "bash make → exit 2 · 2,400 lines"


def test_signal_cap_and_unicode_note() -> None:
    killed = call_outcome("bash", "success", "out\n\nCommand was killed by signal SIGKILL")
    assert ending(killed) == ("exit", None, "SIGKILL")
    assert killed is not None
    assert killed.label == "killed (SIGKILL)"
    capped = call_outcome(
        "bash", "success", "x\n\nBash output exceeded the 10MB safety cap; complete output was not captured."
    )
    assert ending(capped)[0] == "error"
    noted = "Command exited with code 4\n\n[1 character(s) that are not valid Unicode were replaced with \ufffd.]"
    outcome = call_outcome("bash", "success", noted)
    assert ending(outcome) == ("exit", 4, None)
    assert call_outcome("mcp_tool", "success", "Command exited with code 4") == call_outcome("read", "success", "")


def test_partial_read_and_diffs_of_odd_arguments() -> None:
    text = "a\nb\n\n[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]"
    outcome = call_outcome("read", "success", text)
    assert call_summary("read", {"path": "big.txt"}, "", outcome, text) == "read big.txt · lines 1–2,000 of 5,000"
    assert call_diff("edit", {"path": "a", "edits": "nope"}) is None
    assert call_diff("edit", {"path": "a", "edits": [{"oldText": "x"}]}) is None
    assert call_diff("bash", {"command": "ls"}) is None
    two = call_diff(
        "edit", {"path": "a", "edits": [{"oldText": "a\nb", "newText": "a\nc"}, {"oldText": "z", "newText": ""}]}
    )
    assert two is not None
    assert (two.added, two.removed, two.stat) == (1, 2, "+1 \u22122")
    assert "@@ edit 2 of 2 @@" in two.text
