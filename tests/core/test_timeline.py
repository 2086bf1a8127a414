"""The timeline: the display model of a session, from reference fixtures and from sessions the agent wrote."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.core.agent.conftest import Harness, make_agent, text_reply, tool_reply
from tests.loopback import LoopbackServer, Reply
from tests.shared_data import shared_path
from tiny_agent_core.agent.events import StepFinished
from tiny_agent_core.agent.recording import LedgerRecorder
from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.ledger import connect, raw_captures
from tiny_agent_core.messages import AssistantMessage
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.session import apply_transaction, facts, reduce_session
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.timeline import (
    AssistantItem,
    CompactionItem,
    NoticeItem,
    Timeline,
    ToolItem,
    UserItem,
)
from tiny_agent_core.usage import Usage
from tiny_agent_core.wire_view import (
    CaptureAnswer,
    CaptureValues,
    capture_answer,
    capture_text,
    capture_values,
    curl_command,
)


def fixture_timeline(name: str) -> Timeline:
    return Timeline.from_bytes(shared_path("reference", "schemas", "session", "fixtures", f"{name}.jsonl").read_bytes())


def kinds(timeline: Timeline) -> list[str]:
    return [type(item).__name__ for item in timeline.items]


class Recorder:
    """A listener that checks the before/after protocol and logs every call."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.calls: list[tuple[Any, ...]] = []

    def on_inserting(self, index: int, count: int) -> None:
        assert len(self.timeline) == index  # not yet appended
        self.calls.append(("inserting", index, count))

    def on_inserted(self, index: int, count: int) -> None:
        assert len(self.timeline) == index + count
        self.calls.append(("inserted", index, count))

    def on_changed(self, index: int) -> None:
        self.calls.append(("changed", index))


# --- reference fixtures ------------------------------------------------------------------------------------------


def test_completed_tool_run() -> None:
    timeline = fixture_timeline("completed-tool-run")
    assert kinds(timeline) == ["UserItem", "AssistantItem", "ToolItem", "AssistantItem"]
    user, first, tool, final = timeline.items
    assert isinstance(user, UserItem)
    assert user.text == "inspect"
    assert isinstance(first, AssistantItem)
    assert first.text == ""
    assert first.calls[0].name == "read"
    assert first.step.stop_reason == "toolUse"
    assert first.step.model == "test/model"
    assert first.step.usage is None  # no usage fact for that attempt: unknown, not zero
    assert first.step.cost is None
    assert first.step.latency_ms is None
    assert isinstance(tool, ToolItem)
    assert tool.status == "success"
    assert tool.result_text == "contents"
    assert tool.arguments == {"path": "README.md"}
    assert tool.arguments_text == '{"path":"README.md"}'
    assert not tool.arguments_edited
    assert tool.replay == "safe"
    assert tool.replay_key == "builtin:read:v1"
    assert tool.started_at == 1710000000005
    assert tool.finished_at == 1710000000006
    assert tool.duration_ms == 1
    assert tool.step_id == first.step.step_id
    assert tool.tool_started_id is not None
    assert timeline.step(tool.step_id) == first.step
    assert isinstance(final, AssistantItem)
    assert final.text == "done"
    assert final.step.usage == Usage(10, 2, 3, 0)  # the usage fact came after operationFinished
    assert final.step.status == "settled"
    assert final.step.stop_reason == "stop"


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("synthetic-aborted", "aborted"),
        ("synthetic-interrupted", "interrupted"),
    ],
)
def test_synthetic_results(name: str, status: str) -> None:
    tool = fixture_timeline(name).items[-1]
    assert isinstance(tool, ToolItem)
    assert tool.status == status
    assert tool.synthetic
    assert tool.finished
    assert tool.result_text
    assert tool.result_text.startswith("Operation")


def test_synthetic_interrupted_keeps_start_time() -> None:
    tool = fixture_timeline("synthetic-interrupted").items[-1]
    assert isinstance(tool, ToolItem)
    assert tool.started_at is not None
    assert tool.duration_ms is not None
    assert tool.replay == "never"


@pytest.mark.parametrize("name", ["unknown-tool", "invalid-arguments", "truncated-tool-call", "pending-never-tool"])
def test_unanswered_calls_are_pending_or_running(name: str) -> None:
    tool = fixture_timeline(name).items[-1]
    assert isinstance(tool, ToolItem)
    assert tool.status in ("pending", "running")
    assert not tool.finished
    assert tool.result_text is None


def test_invalid_arguments_are_not_parsed() -> None:
    tool = fixture_timeline("invalid-arguments").items[-1]
    assert isinstance(tool, ToolItem)
    assert tool.arguments is None
    assert tool.arguments_text


def test_completed_compaction() -> None:
    timeline = fixture_timeline("completed-compaction")
    compaction = timeline.items[-1]
    assert isinstance(compaction, CompactionItem)
    assert compaction.summary
    assert compaction.compacted >= 1
    assert compaction.retained >= 0
    assert compaction.step is not None
    assert compaction.step.step_kind == "compaction"


def test_aborted_operation_is_a_notice() -> None:
    timeline = fixture_timeline("aborted-open-attempt-reconciled")
    notice = timeline.items[-1]
    assert isinstance(notice, NoticeItem)
    assert notice.kind == "aborted"
    assert not notice.retryable
    assert notice.input_text is not None
    assert notice.step is not None
    assert notice.step.status == "failed"
    assert notice.step.error is not None


def test_attempts_are_tracked_even_without_an_item() -> None:
    timeline = fixture_timeline("attempts-exhausted")
    steps = timeline.steps()
    assert [step.attempt for step in steps] == [1, 2]
    assert steps[0].status == "superseded"
    assert steps[1].status == "attempting"


def test_torn_tail_is_ignored_and_corruption_raises() -> None:
    assert kinds(fixture_timeline("torn-tail")) == ["UserItem"]
    assert len(fixture_timeline("header-only")) == 0
    with pytest.raises(SessionCorruption):
        fixture_timeline("duplicate-json-key")


def _session_copy(tmp_path: Path, name: str) -> Path:
    """A reference fixture under a proper session file name (its header id), in a workspace's session folder."""
    data = shared_path("reference", "schemas", "session", "fixtures", f"{name}.jsonl").read_bytes()
    header = json.loads(data.split(b"\n", 1)[0])
    folder = tmp_path / ".tiny-agent" / "sessions"
    folder.mkdir(parents=True)
    path = folder / f"2026-01-01T00-00-00-000Z_{header['id']}.jsonl"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", ["completed-tool-run", "completed-compaction", "abort-open-attempt"])
def test_open_store_builds_the_timeline_in_the_stores_walk_and_follows_its_commits(tmp_path: Path, name: str) -> None:
    path = _session_copy(tmp_path, name)
    store, timeline = Timeline.open_store(path)
    with store:
        assert list(timeline.items) == list(Timeline.from_bytes(path.read_bytes()).items)
        assert timeline.session_id == store.session_id
        if store.state.operation.kind == "idle":
            entry = facts.new_id()
            store.append([facts.user_entry("and now?", entry_id=entry)])
            assert isinstance(timeline.items[-1], UserItem)
            assert timeline.items[-1].text == "and now?"
    read_only, again = Timeline.open_store(path, read_only=True)
    assert read_only.read_only
    assert list(again.items) == list(Timeline.from_bytes(path.read_bytes()).items)


def test_open_store_raises_what_the_store_raises(tmp_path: Path) -> None:
    path = _session_copy(tmp_path, "duplicate-json-key")
    with pytest.raises(SessionCorruption) as by_store:
        SessionStore.open(path, read_only=True)
    with pytest.raises(SessionCorruption) as by_timeline:
        Timeline.open_store(path, read_only=True)
    assert (by_timeline.value.code, by_timeline.value.line) == (by_store.value.code, by_store.value.line)
    path.write_bytes(b'{"kind": "header"')  # no complete line 1
    with pytest.raises(SessionCorruption, match="can be deleted"):
        Timeline.open_store(path, read_only=True)


@pytest.mark.parametrize("name", ["completed-tool-run", "completed-compaction", "synthetic-interrupted"])
def test_incremental_apply_matches_loading(name: str) -> None:
    data = shared_path("reference", "schemas", "session", "fixtures", f"{name}.jsonl").read_bytes()
    lines = data.split(b"\n")
    state = reduce_session(lines[0] + b"\n")
    incremental = Timeline(state.header)
    recorder = Recorder(incremental)
    incremental.add_listener(recorder)
    for line in lines[1:]:
        if line:
            incremental.apply(apply_transaction(state, line))  # the typed facts a store's observers hear
    assert list(incremental.items) == list(Timeline.from_bytes(data).items)
    inserted = sum(call[2] for call in recorder.calls if call[0] == "inserted")
    assert inserted == len(incremental)
    assert any(call[0] == "changed" for call in recorder.calls)


# --- sessions written by the agent -------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[ProviderClient]:
    transport = httpx.AsyncClient(trust_env=False)
    async with ProviderClient(transport) as client:
        yield client
    await transport.aclose()


@pytest.fixture
def harness(tmp_path: Path, server: LoopbackServer, http: ProviderClient) -> Iterator[Harness]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    made = make_agent(workspace, server, http)
    yield made
    made.store.close()


async def test_live_timeline_follows_the_agent(harness: Harness) -> None:
    (harness.workspace / "notes.txt").write_text("hello 世界")
    timeline = Timeline.from_bytes(harness.store.path.read_bytes())
    recorder = Recorder(timeline)
    timeline.add_listener(recorder)
    harness.store.observe_commits(timeline.apply)
    harness.agent.on_event = None  # type: ignore[attr-defined]
    harness.server.queue(tool_reply(("call_1", "read", '{"path": "notes.txt"}')), text_reply("It says hello 世界."))
    result = await harness.agent.run("What is in notes.txt?")
    assert result.outcome == "completed"
    assert kinds(timeline) == ["UserItem", "AssistantItem", "ToolItem", "AssistantItem"]
    tool = timeline.items[2]
    assert isinstance(tool, ToolItem)
    assert tool.status == "success"
    assert "hello 世界" in (tool.result_text or "")
    assert tool.duration_ms is not None
    assert tool.duration_ms >= 0
    assert tool.replay == "safe"
    final = timeline.items[3]
    assert isinstance(final, AssistantItem)
    assert final.text == "It says hello 世界."
    assert final.step.usage == Usage(10, 2)
    assert list(timeline.items) == list(Timeline.from_bytes(harness.store.path.read_bytes()).items)
    for event in harness.events:
        timeline.apply_event(event)
    final = timeline.items[3]
    assert isinstance(final, AssistantItem)
    assert final.step.repairs is not None
    assert final.step.dropped is not None
    assert final.step.latency_ms is not None


async def test_failed_run_is_a_retryable_notice_with_its_step(harness: Harness) -> None:
    harness.server.queue(Reply.error(500, {"error": {"message": "boom"}}))
    result = await harness.agent.run("try")
    assert result.outcome == "failed"
    timeline = Timeline.from_bytes(harness.store.path.read_bytes())
    notice = timeline.items[-1]
    assert isinstance(notice, NoticeItem)
    assert notice.kind == "failed"
    assert notice.retryable
    assert notice.code == "model_error"
    assert notice.input_text == "try"
    assert "boom" in notice.text or "500" in notice.text
    assert notice.step is not None
    assert notice.step.status == "failed"
    assert notice.step.usage is None


async def test_enrich_from_the_ledger(harness: Harness, tmp_path: Path) -> None:
    conn = connect(tmp_path / "ledger.sqlite3")
    ledger = LedgerRecorder(conn, harness.store.path, harness.workspace)
    harness.server.queue(text_reply("Hi"))
    await harness.agent.run("hello")
    for record in harness.records:  # what the app's recorder receives as each request ends
        ledger(record)
    ledger.close()
    timeline = Timeline.from_bytes(harness.store.path.read_bytes())
    answer = timeline.items[-1]
    assert isinstance(answer, AssistantItem)
    assert answer.step.http_status is None
    changes = Recorder(timeline)
    timeline.add_listener(changes)
    assert timeline.enrich(conn) == 1
    answer = timeline.items[-1]
    assert isinstance(answer, AssistantItem)
    assert answer.step.http_status == 200
    assert answer.step.latency_ms is not None
    assert answer.step.repairs is not None
    assert answer.step.cost == 0  # the loopback provider is a local server: no API charge, not unknown
    assert answer.step.cost_source == "local"
    assert changes.calls == [("changed", len(timeline) - 1)]
    assert timeline.enrich(conn) == 1
    assert len(changes.calls) == 1
    captures = raw_captures(conn, answer.step.attempt_id)
    text = capture_text(captures[0])
    assert text.request.startswith("POST ")
    assert '"messages"' in text.request
    assert text.response.startswith("HTTP 200")
    assert "data:" in text.response
    conn.close()


def test_step_finished_event_fills_cost_and_timings(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, model="m")
    timeline = Timeline.from_bytes(store.path.read_bytes())
    store.observe_commits(timeline.apply)
    op, step, attempt = facts.new_id(), facts.new_id(), facts.new_id()
    user = facts.new_id()
    store.append([facts.user_entry("hi", entry_id=user), facts.run_started(operation_id=op, input_entry_id=user)])
    snapshot = facts.configuration_snapshot(model="m", system_prompt_digest=facts.system_prompt_digest(""))
    store.append(
        facts.step_attempt(
            operation_id=op,
            step_id=step,
            attempt_id=attempt,
            context_through_entry_id=user,
            configuration_snapshot=snapshot,
        )
    )
    message = AssistantMessage(content="hello")
    store.append(facts.assistant_entry(message, step_id=step, attempt_id=attempt, stop_reason="stop"))
    timeline.apply_event(
        StepFinished(step, attempt, message, "stop", None, Decimal("0.0012"), "price_table", ("a",), ("b",), 12.6, 3.2)
    )
    answer = timeline.items[-1]
    assert isinstance(answer, AssistantItem)
    assert answer.step.cost == Decimal("0.0012")
    assert answer.step.cost_source == "price_table"
    assert answer.step.latency_ms == 13
    assert answer.step.ttft_ms == 3
    assert answer.step.repairs == ("a",)
    assert answer.step.dropped == ("b",)
    assert answer.step.usage is None
    store.close()


def test_truncated_capture_is_shown_whole() -> None:
    text = capture_text({"truncated": True, "originalSize": 9, "prefix": "{"})
    assert '"truncated": true' in text.request
    assert text.request == text.response


def test_capture_values_answer_and_curl() -> None:
    stream = {
        "method": "POST",
        "url": "http://127.0.0.1:9/v1/chat/completions",
        "requestHeaders": {"content-type": "application/json"},
        "requestBody": '{"model": "m", "messages": [{"role": "user", "content": "it\'s"}]}',
        "status": 200,
        "responseBody": 'data: {"model": "m-2026", "choices": []}\n\ndata: [DONE]\n\n',
    }
    values = capture_values(stream)
    assert values.request["model"] == "m"
    assert values.response == [{"model": "m-2026", "choices": []}, "[DONE]"]
    assert capture_answer([stream]) == CaptureAnswer(200, "m-2026")
    assert capture_answer([]) == CaptureAnswer(None, None)
    plain = {**stream, "status": 401, "responseBody": '{"error": {"message": "bad key"}}'}
    assert capture_values(plain).response == {"error": {"message": "bad key"}}
    assert capture_answer([plain]) == CaptureAnswer(401, None)
    curl = curl_command(stream)
    assert curl is not None
    assert curl.splitlines()[1].strip() == '-H "Authorization: Bearer $API_KEY" \\'
    assert "it'\\''s" in curl  # shell-quoted
    assert curl_command({"truncated": True}) is None
    assert capture_values({"truncated": True}) == CaptureValues({"truncated": True}, None)


def test_a_step_s_outbound_repairs_are_its_last_capture_s() -> None:
    first = {"status": 200, "outboundRepairs": ["tool_choice_auto"]}
    assert capture_answer([first]).outbound_repairs == ("tool_choice_auto",)
    assert capture_answer([first, {"status": 200, "outboundRepairs": []}]).outbound_repairs == ()  # re-sent plainly
    assert capture_answer([first, {"status": 200}]).outbound_repairs is None  # the last says nothing: unknown
    assert capture_answer([first, "pruned"]).outbound_repairs is None
    assert capture_answer([{"outboundRepairs": ["a", 7, None]}]).outbound_repairs == ("a",)  # only names kept
