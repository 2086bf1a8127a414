"""The status bar's words: one meaning of "input", unknown never shown as zero, speed figures, plurals."""

from __future__ import annotations

from decimal import Decimal

from pytestqt.qtbot import QtBot

from tiny_agent_core.usage import Usage
from tiny_agent_gui.status_bar import (
    SessionFigures,
    SpeedLabel,
    compact_count,
    plural,
    step_speed_text,
    usage_text,
    usage_tooltip,
)


def _figures(**overrides: object) -> SessionFigures:
    values: dict[str, object] = {
        "usage": Usage(9847, 499, cache_read=30976),
        "requests": 3,
        "unknown_usage": 0,
        "unanswered": 0,
        "cost": Decimal("0.0541"),
        "unknown_cost": 0,
        "last": Usage(100, 10, cache_read=2900),
    }
    values.update(overrides)
    return SessionFigures(**values)  # type: ignore[arg-type]


def test_the_issue_example() -> None:
    assert usage_text(_figures()) == "Input 9.8k · Output 499 · Cached 31k (76%) · $0.054"


def test_the_tooltip_breaks_every_bucket_down() -> None:
    tip = usage_tooltip(_figures(usage=Usage(9847, 499, cache_read=30976, cache_write=1200)))
    assert "This session: 3 model requests" in tip
    assert "Input (prompt tokens not read from or written to a cache): 9,847" in tip
    assert "Cached (prompt tokens read from the provider's cache): 30,976" in tip
    assert "Cache write (prompt tokens written to the cache): 1,200" in tip
    assert "Prompt tokens in all: 42,023" in tip
    assert "Cache hit rate: 73.7% this session, 96.7% last request" in tip


def test_unknown_is_a_word_never_zero() -> None:
    assert usage_text(_figures(usage=Usage(0, 0), unknown_usage=2, requests=2, cost=None, unknown_cost=2)) == (
        "Usage unknown · cost unknown"
    )
    partly = usage_text(_figures(unknown_usage=1, unknown_cost=1))
    assert partly.endswith("≥ $0.054 + 1 unknown · usage unknown for 1 answer")  # the cost view's wording
    failed = _figures(requests=4, unanswered=1)
    assert "1 request failed or stopped before an answer" in usage_tooltip(failed)
    assert "unknown" not in usage_text(failed)


def test_cache_writes_appear_when_there_are_some() -> None:
    text = usage_text(_figures(usage=Usage(500, 20, cache_read=0, cache_write=4000)))
    assert text == "Input 500 · Output 20 · Cached 0 (0%) · Cache write 4k · $0.054"


def test_compact_counts_and_plurals() -> None:
    assert [compact_count(n) for n in (0, 999, 1000, 9847, 30976, 999_499, 1_234_567, 25_000_000)] == [
        "0",
        "999",
        "1k",
        "9.8k",
        "31k",
        "999k",
        "1.2M",
        "25M",
    ]
    assert plural(1, "model") == "1 model"
    assert plural(0, "model") == "0 models"
    assert plural(1200, "session") == "1,200 sessions"


def test_step_speed() -> None:
    assert step_speed_text(2100, 400, 65) == "2.1 s · TTFT 0.4 s · 38 tok/s"
    assert step_speed_text(46, 12, 5) == "46 ms · TTFT 12 ms"  # too short for a meaningful rate
    assert step_speed_text(2100, 400, None) == "2.1 s · TTFT 0.4 s · output tokens unknown"
    assert step_speed_text(None, None, None) == "Last step: time unknown"


def test_the_live_label_streams_then_shows_the_step(qtbot: QtBot) -> None:
    label = SpeedLabel()
    qtbot.addWidget(label)
    label.step_started()
    assert label.text().startswith("waiting for the first token · ")
    label.received("x" * 400)
    qtbot.wait(300)
    assert label.text().startswith("streaming · ")
    assert "≈" in label.text()
    assert "tok/s" in label.text()
    label.step_finished(2100, 400, Usage(10, 65))
    assert label.text() == "2.1 s · TTFT 0.4 s · 38 tok/s"
    assert not label.streaming
    label.step_started()
    label.stopped()
    assert label.text() == ""


def test_a_session_that_cost_nothing_says_why() -> None:
    local = _figures(cost=Decimal(0), unknown_cost=0, cost_sources=frozenset({"local"}))
    assert usage_text(local).endswith("· local — no API charge")
    both = _figures(cost=Decimal(0), unknown_cost=0, cost_sources=frozenset({"local", "not_billed"}))
    assert usage_text(both).endswith("· local — no API charge, not billed")
    mixed = _figures(cost=Decimal("0.01"), unknown_cost=0, cost_sources=frozenset({"local", "price_table"}))
    assert usage_text(mixed).endswith("· $0.01")
    with_unknown = _figures(cost=Decimal(0), unknown_cost=1, cost_sources=frozenset({"local"}))
    assert "unknown" in usage_text(with_unknown)
