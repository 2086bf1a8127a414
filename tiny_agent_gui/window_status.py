"""What the main window's status bar and session title say, computed from the core's display models.

Plain functions over explicit inputs (the timeline, the open session's state, the model catalog); the window only
puts their results into its labels. No business rules here beyond wording: the figures come from the core
(:func:`~tiny_agent_core.cost_sums.step_costs`, the timeline's steps).
"""

from __future__ import annotations

from tiny_agent_core.agent.events import DialectLearned
from tiny_agent_core.cost_sums import step_costs
from tiny_agent_core.settings import ProfileConfig
from tiny_agent_core.timeline import Timeline, UserItem
from tiny_agent_core.usage import Usage
from tiny_agent_gui.model_picker import ModelCatalog
from tiny_agent_gui.status_bar import SessionFigures

LEARNED_WORDS = {
    ("stream_tools", False): "tool turns are sent without streaming (the server cannot stream them)",
    ("stream_tools", True): "tool turns are streamed again",
    ("null_content", False): 'tool-call messages are sent with empty text "" (the server refuses null)',
    ("null_content", True): "tool-call messages are sent with null content",
    ("tool_choice_auto", True): 'tool_choice "auto" is sent with the tools (the server needs it to use them)',
    ("tool_choice_auto", False): "tool_choice is no longer sent",
}
"""What the status bar says a learned dialect change does, by (profile field, new value)."""

TITLE_LIMIT = 100
"""Characters of the first prompt shown as the session title (the tooltip shows up to ten times as many)."""


def learned_words(event: DialectLearned) -> str:
    """What the learned dialect changes of ``event`` do, in words, ``;``-separated."""
    return "; ".join(
        LEARNED_WORDS.get((field, value), f"{field} is now {value}") for field, value in event.changes.items()
    )


def latest_recorded_usage(timeline: Timeline | None) -> Usage | None:
    """The usage of the timeline's last step that reported one."""
    steps = [step for step in (timeline.steps() if timeline else []) if step.usage is not None]
    return steps[-1].usage if steps else None


def session_figures(timeline: Timeline | None, usage: Usage, last: Usage | None) -> SessionFigures:
    """The usage label's figures: ``usage`` is the session's recorded total, ``last`` the latest step's usage
    (else the latest recorded one is used)."""
    steps = timeline.steps() if timeline is not None else []
    answered = [step for step in steps if step.status == "settled" or step.usage is not None]
    cost = step_costs(steps)
    return SessionFigures(
        usage=usage,
        requests=len(steps),
        unknown_usage=sum(1 for step in answered if step.usage is None),
        unanswered=len(steps) - len(answered),
        cost=cost.total,
        unknown_cost=cost.unknown,
        last=last or latest_recorded_usage(timeline),
        cost_sources=cost.sources,
    )


def session_title(timeline: Timeline | None) -> str:
    """The session's first prompt (whole; the caller cuts it), else ``"New session"``."""
    return next(
        (item.text for item in (timeline.items if timeline else []) if isinstance(item, UserItem)),
        "New session",
    )


def model_label(catalog: ModelCatalog, config: ProfileConfig | None) -> str | None:
    """``provider · model`` with the price per million tokens when the catalog knows it."""
    if config is None or not config.model:
        return None
    entry = catalog.entry_for(config.id, config.model)
    if entry is None:
        return f"{config.name} · {config.model}"
    source = entry.rates.source
    price = "price unknown" if source is None else entry.price_text + ("" if source == "local" else " per M")
    context = f" · context {entry.context_text}" if entry.context_length is not None else ""
    return f"{entry.label} · {price}{context}"
