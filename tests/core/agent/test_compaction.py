"""/compact as the reference does it: keep the last turns, summarize the rest, chain summaries."""

from __future__ import annotations

import json

from tests.core.agent.conftest import Harness, text_reply
from tiny_agent_core.agent.compaction import COMPACTION_PROMPT, compaction_cut


async def _turns(harness: Harness, count: int) -> None:
    for number in range(count):
        harness.server.queue(text_reply(f"answer {number}"))
        assert (await harness.agent.run(f"prompt {number}")).outcome == "completed"


def test_cut_keeps_six_and_backs_up_to_a_user_message() -> None:
    turn = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    assert compaction_cut(turn * 3) is None
    cut = compaction_cut(turn * 4)
    assert cut is not None
    assert (cut.cut, cut.retained) == (2, 6)
    tools = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
        {"role": "tool", "content": "r", "tool_call_id": "c"},
        {"role": "assistant", "content": "a"},
    ]
    assert compaction_cut(tools * 2) is None  # backing up from index 2 reaches 0
    cut = compaction_cut(tools * 3)
    assert cut is not None
    assert (cut.cut, cut.retained) == (4, 8)  # from index 6 back to the user message at 4


async def test_compaction_keeps_six_and_summarizes_the_rest(harness: Harness) -> None:
    await _turns(harness, 4)
    harness.server.queue(text_reply("SUMMARY of turns 0"))
    result = await harness.agent.compact()
    assert (result.outcome, result.answer) == ("completed", "Compacted 2 messages (kept last 6).")
    request = harness.server.requests[-1].json()
    assert "tools" not in request
    assert request["messages"][0] == {"role": "system", "content": COMPACTION_PROMPT}
    assert json.loads(request["messages"][1]["content"]) == [
        {"role": "user", "content": "prompt 0"},
        {"role": "assistant", "content": "answer 0"},
    ]
    state = harness.reduced()
    assert state.operation.kind == "idle"
    assert len(state.transcript) == 8  # nothing is deleted
    assert len(state.active_context) == 7
    assert state.active_context[0] == {"role": "user", "content": "[Compacted history]\nSUMMARY of turns 0"}

    harness.server.queue(text_reply("next"))
    await harness.agent.run("prompt 4")
    sent = harness.request_messages(len(harness.server.requests) - 1)
    assert sent[1]["content"].startswith("[Compacted history]")
    assert sent[-1] == {"role": "user", "content": "prompt 4"}


async def test_summaries_chain(harness: Harness) -> None:
    await _turns(harness, 4)
    harness.server.queue(text_reply("first summary"))
    await harness.agent.compact()
    await _turns(harness, 2)
    harness.server.queue(text_reply("second summary"))
    result = await harness.agent.compact()
    assert result.outcome == "completed"
    summarized = json.loads(harness.server.requests[-1].json()["messages"][1]["content"])
    assert summarized[0] == {"role": "user", "content": "[Compacted history]\nfirst summary"}
    assert harness.reduced().active_context[0]["content"] == "[Compacted history]\nsecond summary"


async def test_nothing_to_compact(harness: Harness) -> None:
    await _turns(harness, 1)
    result = await harness.agent.compact()
    assert (result.outcome, result.answer) == ("completed", "Nothing to compact.")
    assert len(harness.server.requests) == 1


async def test_a_blank_summary_fails_the_compaction_durably(harness: Harness) -> None:
    await _turns(harness, 4)
    harness.server.queue(text_reply("   "))
    result = await harness.agent.compact()
    assert result.outcome == "failed"
    assert "invalid compaction summary" in str(result.error)
    state = harness.reduced()
    assert state.operation.kind == "idle"
    assert len(state.active_context) == 8
