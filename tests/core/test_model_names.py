"""short_model_tag: a table of real model ids and their tags, and the rules no id may break."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiny_agent_core.model_names import TAG_MAX, short_model_tag

TABLE = [
    ("anthropic/claude-sonnet-4.5", "sonnet-4.5"),
    ("claude-sonnet-4-5-20250929", "sonnet-4.5"),
    ("claude-opus-4-1-20250805", "opus-4.1"),
    ("claude-sonnet-4-20250514", "sonnet-4"),
    ("claude-3-5-sonnet-20241022", "sonnet-3.5"),
    ("claude-3-opus-latest", "opus-3"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("gpt-4o", "gpt-4o"),
    ("openai/gpt-4o-mini", "gpt-4o-mini"),
    ("gpt-4-0613", "gpt-4"),
    ("gpt-3.5-turbo-1106", "gpt-3.5-turbo"),
    ("qwen2.5-coder:7b", "qwen2.5-coder"),
    ("llama3.1:8b-instruct-q4_K_M", "llama3.1"),
    ("deepseek/deepseek-chat", "deepseek-chat"),
    ("deepseek-chat", "deepseek-chat"),
    ("meta-llama/llama-3.1-8b-instruct:free", "llama-3.1-8b-instruct"),
    ("mistral-large-latest", "mistral-large"),
    ("mistral-small-2409", "mistral-small"),
    ("google/gemini-2.5-pro", "gemini-2.5-pro"),
    ("lmstudio-community/qwen2.5-7b-instruct", "qwen2.5-7b-instruct"),
    ("o3", "o3"),
    ("  gpt-4o  ", "gpt-4o"),
    ("", ""),
    ("2024-08-06", "2024-08-06"),  # nothing but a "date": kept whole rather than emptied
    ("vendor/", "vendor/"),
    (":7b", ":7b"),
]


@pytest.mark.parametrize(("model", "tag"), TABLE)
def test_short_model_tags(model: str, tag: str) -> None:
    assert short_model_tag(model) == tag


def test_a_long_id_is_cut_with_an_ellipsis() -> None:
    tag = short_model_tag("vendor/" + "x" * 500)
    assert len(tag) == TAG_MAX
    assert tag.endswith("…")


@given(st.text(max_size=200))
def test_any_id_gives_a_bounded_tag_that_is_empty_only_for_an_empty_id(model: str) -> None:
    tag = short_model_tag(model)
    assert len(tag) <= TAG_MAX
    assert bool(tag) == bool(model.split())
