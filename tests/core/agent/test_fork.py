"""Forking a session before a user message: a real v2 session with the same earlier transcript, new ids, a link."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.agent.conftest import Harness, text_reply, tool_reply
from tiny_agent_core.fork import ForkError, fork_before, read_origin
from tiny_agent_core.session import reduce_session, state_to_json


def _ids(path: Path) -> set[str]:
    out: set[str] = set()
    for line in path.read_text().splitlines()[1:]:
        value = json.loads(line)
        out.update(fact["id"] for fact in (value if isinstance(value, list) else [value]))
    return out


async def test_a_fork_keeps_the_history_before_the_message_and_reduces_cleanly(harness: Harness) -> None:
    harness.server.queue(
        tool_reply(("c1", "write", '{"path": "a.txt", "content": "one"}')),
        text_reply("wrote a.txt"),
        text_reply("second answer"),
    )
    await harness.agent.run("first prompt")
    usage_before = harness.store.state.usage
    await harness.agent.run("second prompt")
    state = harness.store.state
    second = [entry_id for entry_id, message in state.message_entries() if message.get("content") == "second prompt"]

    fork, prompt = fork_before(harness.store.path, second[0], model="other-model", provider="custom")
    fork.close()

    assert prompt == "second prompt"
    reduced = reduce_session(fork.path.read_bytes())  # the strict reducer accepts every byte
    assert reduced.header.model == "other-model"
    assert reduced.operation.kind == "idle"
    origin_json = state_to_json(state)
    before = origin_json["transcript"][: [m.get("content") for m in origin_json["transcript"]].index("second prompt")]
    assert state_to_json(reduced)["transcript"] == before
    assert reduced.usage == usage_before  # the copied steps keep their usage
    assert not _ids(fork.path) & _ids(harness.store.path)  # every id is new: index rows never collide
    origin = read_origin(fork.path)
    assert origin is not None
    assert (origin.origin_session_id, origin.before_entry_id) == (harness.store.session_id, second[0])
    assert read_origin(harness.store.path) is None


async def test_forking_before_the_first_message_gives_an_empty_session(harness: Harness) -> None:
    harness.server.queue(text_reply("hello"))
    await harness.agent.run("only prompt")
    first = harness.store.state.message_entries()[0][0]
    fork, prompt = fork_before(harness.store.path, first, model="m2", provider="custom")
    fork.close()
    assert prompt == "only prompt"
    assert reduce_session(fork.path.read_bytes()).transcript == []


async def test_only_a_user_message_can_be_forked_at(harness: Harness) -> None:
    harness.server.queue(text_reply("an answer"))
    await harness.agent.run("a prompt")
    assistant = harness.store.state.message_entries()[1][0]
    sessions = harness.store.path.parent
    with pytest.raises(ForkError):
        fork_before(harness.store.path, assistant, model="m2", provider="custom")
    assert sorted(path.name for path in sessions.iterdir()) == [harness.store.path.name]  # nothing left behind


async def test_a_fork_after_a_compaction_keeps_the_compacted_context(harness: Harness) -> None:
    harness.server.queue(*(text_reply(f"answer {n}") for n in range(4)), text_reply("the summary"), text_reply("last"))
    for n in range(4):
        await harness.agent.run(f"prompt {n}")
    compacted = await harness.agent.compact()
    assert compacted.outcome == "completed"
    await harness.agent.run("after compaction")
    state = harness.store.state
    last = next(eid for eid, message in state.message_entries() if message.get("content") == "after compaction")

    fork, _prompt = fork_before(harness.store.path, last, model="m2", provider="custom")
    fork.close()
    reduced = reduce_session(fork.path.read_bytes())  # the recomputed sourceDigest and renamed ids are accepted
    assert reduced.active_context[0]["content"].endswith("the summary")
    assert len(reduced.transcript) == 8
