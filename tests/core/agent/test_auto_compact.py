"""The rule of automatic compaction before a prompt (tiny_agent_core.agent.auto_compact)."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.session.builders import SessionScript
from tiny_agent_core.agent.auto_compact import (
    DEFAULT_PERCENT,
    AutoCompaction,
    decide,
    last_prompt_tokens,
    should_compact,
    shrinks,
)
from tiny_agent_core.timeline import Timeline
from tiny_agent_core.usage import Usage


class Step(NamedTuple):
    step_kind: str
    status: str
    usage: Usage | None


def turns(count: int, summary: bool = False) -> list[dict[str, Any]]:
    """An active context of ``count`` user/assistant pairs, after an earlier compaction's summary if ``summary``."""
    head = [{"role": "user", "content": "[Compacted history]\nearlier work"}] if summary else []
    pairs = [
        [{"role": "user", "content": f"ask {n}"}, {"role": "assistant", "content": f"did {n}"}] for n in range(count)
    ]
    return head + [message for pair in pairs for message in pair]


CONTEXT = turns(5)
"""Ten messages: compacting them keeps the last six and summarizes the rest."""


def run_step(prompt: int | None, status: str = "settled") -> Step:
    return Step("assistant", status, None if prompt is None else Usage(prompt, 10))


def test_exactly_at_the_threshold_compacts_and_one_token_below_does_not() -> None:
    assert should_compact(850, 1000, 0.85)
    assert not should_compact(849, 1000, 0.85)
    assert should_compact(27_853, 32_768, 0.85)  # 0.85 × 32,768 = 27,852.8
    assert not should_compact(27_852, 32_768, 0.85)
    assert should_compact(29, 100, 0.29)  # 0.29 × 100 is 28.999… in floating point, and 29 in the rule


def test_unknown_figures_and_an_empty_window_never_compact() -> None:
    assert not should_compact(None, 32_768, 0.85)
    assert not should_compact(40_000, None, 0.85)
    assert not should_compact(None, None, 0.85)
    assert not should_compact(0, 0, 0.85)
    assert not should_compact(10, 0, 0.85)
    assert not should_compact(10, -5, 0.85)


def test_zero_usage_of_a_known_window_is_a_figure_not_unknown() -> None:
    assert not should_compact(0, 4096, 0.85)
    assert should_compact(0, 4096, 0.0)


@given(
    prompt=st.integers(min_value=0, max_value=2**40),
    window=st.integers(min_value=1, max_value=2**40),
    percent=st.integers(min_value=10, max_value=100),
)
def test_the_rule_is_exact_integer_arithmetic(prompt: int, window: int, percent: int) -> None:
    assert should_compact(prompt, window, percent / 100) == (prompt * 100 >= percent * window)


def test_the_last_prompt_size_is_the_newest_assistant_request_with_usage() -> None:
    assert last_prompt_tokens([]) is None
    assert last_prompt_tokens([run_step(None)]) is None
    steps = [run_step(100), run_step(900, "failed"), run_step(None, "failed")]
    assert last_prompt_tokens(steps) == 900
    cached = Step("assistant", "settled", Usage(input=100, output=5, cache_read=700, cache_write=50))
    assert last_prompt_tokens([cached]) == 850  # input + cache reads + cache writes, as the status bar counts


def test_a_settled_compaction_since_makes_the_figure_unknown() -> None:
    compacted = Step("compaction", "settled", Usage(30_000, 400))
    assert last_prompt_tokens([run_step(30_000), compacted]) is None
    assert last_prompt_tokens([run_step(30_000), compacted, run_step(2_000)]) == 2_000
    assert last_prompt_tokens(step for step in [run_step(30_000), compacted]) is None


def test_a_compaction_that_did_not_settle_changes_nothing_and_its_usage_does_not_count() -> None:
    failed = Step("compaction", "failed", Usage(31_000, 0))
    assert last_prompt_tokens([run_step(30_000), failed]) == 30_000
    assert last_prompt_tokens([failed]) is None


def test_decide_gives_the_figures_and_says_why() -> None:
    decision = decide([run_step(28_508)], 32_768, DEFAULT_PERCENT, CONTEXT)
    assert decision == AutoCompaction(28_508, 32_768)
    assert decision.reason() == "the last request used 87 % of the model's 32,768-token context"
    assert decide([run_step(28_508)], 32_768, None, CONTEXT) is None  # turned off
    assert decide([run_step(28_508)], None, DEFAULT_PERCENT, CONTEXT) is None  # window unknown
    assert decide([run_step(None)], 32_768, DEFAULT_PERCENT, CONTEXT) is None  # usage unknown
    assert decide([run_step(20_000)], 32_768, DEFAULT_PERCENT, CONTEXT) is None  # below
    assert decide([run_step(20_000)], 32_768, 60, CONTEXT) is not None


@pytest.mark.parametrize("percent", [10, 85, 100])
def test_decide_at_exactly_the_percentage(percent: int) -> None:
    assert decide([run_step(percent * 40)], 4000, percent, CONTEXT) is not None
    assert decide([run_step(percent * 40 - 1)], 4000, percent, CONTEXT) is None


def test_a_context_compaction_would_not_shrink_is_not_compacted() -> None:
    assert shrinks(turns(5))
    assert not shrinks(turns(3))  # "Nothing to compact.": six messages are always kept
    assert not shrinks(turns(3, summary=True))  # only the summary before the kept turns: it would summarize itself
    assert shrinks(turns(4, summary=True))
    assert decide([run_step(30_000)], 32_768, DEFAULT_PERCENT, turns(3, summary=True)) is None


def test_a_finished_compaction_in_a_real_timeline_resets_the_figure() -> None:
    script = SessionScript(seed=3)
    script.run("first", ["an answer"], usage=(3_700, 10, 0, 0))
    script.run("second", ["another answer"], usage=(3_700, 10, 0, 0))
    script.compact()
    timeline = Timeline.from_bytes(script.data())
    assert [step.status for step in timeline.steps() if step.step_kind == "compaction"] == ["settled"]
    assert last_prompt_tokens(timeline.steps()) is None  # the context was replaced since that request
