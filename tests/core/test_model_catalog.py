"""The model picker's rows: prices per million tokens (unknown, local), context windows, filtering, and when a
switch would be refused by the recovery planner."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from pathlib import Path

from tiny_agent_core.model_catalog import entries_for, filter_entries, recovery_conflict
from tiny_agent_core.pricing import PriceOverride
from tiny_agent_core.session import facts
from tiny_agent_core.session.store import SessionStore
from tiny_agent_core.settings import ProfileConfig


def test_rows_show_price_per_million_unknown_or_local_and_the_chosen_models_context() -> None:
    openai = replace(ProfileConfig.from_preset("openai", "openai"), model="gpt-4o")
    rows = entries_for(openai, ["gpt-4o", "no-such-model"], context=128_000)
    assert [(r.label, r.context_text) for r in rows] == [
        ("OpenAI · gpt-4o", "128k"),
        ("OpenAI · no-such-model", "unknown"),
    ]
    assert rows[0].price_text.startswith("$2.50 / $10.00")
    assert rows[1].price_text == "unknown"  # never $0
    custom = replace(ProfileConfig.custom("c", "https://llm.example.com/v1"), model="m")
    assert entries_for(custom, [])[0].price_text == "unknown"
    priced = entries_for(custom, [], {("custom", "*"): PriceOverride(Decimal("0.15"), Decimal("0.6"))})
    assert priced[0].price_text == "$0.15 / $0.60"
    local = replace(ProfileConfig.from_preset("ollama", "ollama"), model="qwen2.5-coder")
    assert entries_for(local, ["qwen2.5-coder"])[0].price_text == "local — no API charge"


def test_typing_filters_by_every_word() -> None:
    rows = entries_for(replace(ProfileConfig.from_preset("openai", "openai"), model="gpt-4o"), ["gpt-4o-mini", "o3"])
    assert [r.model for r in filter_entries(rows, "openai MINI")] == ["gpt-4o-mini"]
    assert [r.model for r in filter_entries(rows, "")] == ["gpt-4o", "gpt-4o-mini", "o3"]


def session_left_open(workspace: Path, model: str) -> Path:
    """A session whose run was left open (as a crash leaves it) in a step configured for ``model``."""
    with SessionStore.create(workspace, model=model, provider="custom") as store:
        user, operation = facts.new_id(), facts.new_id()
        store.append(
            [facts.user_entry("hi", entry_id=user), facts.run_started(operation_id=operation, input_entry_id=user)]
        )
        snapshot = facts.configuration_snapshot(model=model, system_prompt_digest=facts.system_prompt_digest("s"))
        store.append(
            facts.step_attempt(
                operation_id=operation,
                step_id=facts.new_id(),
                attempt_id=facts.new_id(),
                context_through_entry_id=user,
                configuration_snapshot=snapshot,
            )
        )
    return store.path


def test_an_unfinished_operation_on_another_model_is_a_conflict(tmp_path: Path) -> None:
    with SessionStore.create(tmp_path, model="model-a", provider="custom") as idle:
        assert recovery_conflict(idle.state, "model-b") is None  # idle: any model
    state = SessionStore.open(session_left_open(tmp_path, "model-a"), read_only=True).state
    assert recovery_conflict(state, "model-b") == "model-a"
    assert recovery_conflict(state, "model-a") is None
