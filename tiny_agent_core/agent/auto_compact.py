"""When a prompt is preceded by a compaction: the rule of automatic compaction (SPEC "Local models").

The reference compacts only on ``/compact``. The desktop also compacts *before sending a prompt* when the session's
last model request came close to the model's context window, so that the next request does not overflow it:

- The figure is the **prompt size of the last model request** (:attr:`~tiny_agent_core.usage.Usage.prompt`: input
  plus cache reads and writes, as the status bar's context label shows it), taken from the newest step that
  reported usage (:func:`last_prompt_tokens`). A settled compaction step after it means the context was replaced
  since, so the figure is unknown until the next request reports one.
- It applies when that figure is at least ``threshold`` (a fraction, default :data:`DEFAULT_PERCENT` %) of the
  model's **known** context window (:func:`decide`). An unknown window or an unknown figure never compacts
  (unknown is not zero), nor does a window of 0 tokens.
- What happens then is an ordinary compaction operation (:meth:`~tiny_agent_core.agent.loop.Agent.compact`, the
  same facts as ``/compact``) before the run; the session format gains nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from tiny_agent_core.agent.compaction import compaction_cut
from tiny_agent_core.session.rules.compaction import SUMMARY_PREFIX
from tiny_agent_core.usage import Usage

__all__ = [
    "DEFAULT_PERCENT",
    "PERCENT_RANGE",
    "AutoCompaction",
    "decide",
    "last_prompt_tokens",
    "should_compact",
    "shrinks",
]

DEFAULT_PERCENT = 85
"""Share of the context window, in percent, from which a prompt is preceded by a compaction (the default)."""

PERCENT_RANGE = (10, 100)
"""The whole percentages a user may choose (inclusive)."""


class RecordedStep(Protocol):
    """What the rule reads of a model request (e.g. :class:`~tiny_agent_core.timeline.StepInfo`)."""

    @property
    def step_kind(self) -> str:
        """``assistant`` or ``compaction``."""
        ...

    @property
    def status(self) -> str:
        """``attempting`` | ``settled`` | ``failed`` | ``superseded``."""
        ...

    @property
    def usage(self) -> Usage | None:
        """The request's usage; ``None`` when the provider reported none."""
        ...


@dataclass(frozen=True)
class AutoCompaction:
    """A decision to compact before sending a prompt, with the figures it was made on."""

    prompt_tokens: int
    """The last model request's prompt size."""
    context_window: int
    """The model's context window, in tokens."""

    @property
    def share(self) -> float:
        """The fraction of the window the last request used."""
        return self.prompt_tokens / self.context_window

    def reason(self) -> str:
        """Why, in words: ``the last request used 87 % of the model's 32,768-token context``."""
        return f"the last request used {self.share * 100:.0f} % of the model's {self.context_window:,}-token context"


def should_compact(last_prompt_tokens: int | None, context_window: int | None, threshold: float) -> bool:
    """Whether the last request's prompt size reached ``threshold`` (a fraction in (0, 1]) of the context window.

    ``False`` when either figure is unknown (``None``) or the window is not positive. The threshold is read as the
    nearest fraction with a denominator up to 10,000, so that 0.85 of 1,000 tokens is exactly 850."""
    if last_prompt_tokens is None or context_window is None or context_window <= 0:
        return False
    return last_prompt_tokens >= Fraction(threshold).limit_denominator(10_000) * context_window


def last_prompt_tokens(steps: Iterable[RecordedStep]) -> int | None:
    """The prompt size of the newest model request that reported usage, in ``steps`` (oldest first).

    ``None`` when no request reported one, or when a compaction settled after it (the context was replaced since).
    A compaction request's own usage never counts: it measures the history it summarized, not the next request.
    """
    ordered: Sequence[RecordedStep] = steps if isinstance(steps, Sequence) else list(steps)
    for step in reversed(ordered):
        if step.step_kind == "compaction":
            if step.status == "settled":
                return None
            continue
        if step.usage is not None:
            return step.usage.prompt
    return None


def shrinks(active_context: Sequence[dict[str, Any]]) -> bool:
    """Whether compacting ``active_context`` now would leave it smaller: the cut (:func:`compaction_cut`) must
    take more than an earlier compaction's summary alone, else each prompt would pay for a request that summarizes
    the summary and the context stays as full."""
    cut = compaction_cut(active_context)
    if cut is None:
        return False
    first = active_context[0].get("content")
    return cut.cut > 1 or not (isinstance(first, str) and first.startswith(SUMMARY_PREFIX))


def decide(
    steps: Iterable[RecordedStep],
    context_window: int | None,
    percent: int | None,
    active_context: Sequence[dict[str, Any]],
) -> AutoCompaction | None:
    """Whether to compact before the next prompt of a session with these ``steps`` (oldest first) and this
    ``active_context``, for a model with ``context_window`` tokens (``None``: unknown), with automatic compaction at
    ``percent`` % (``None``: off); never when compacting would not shrink the context (:func:`shrinks`)."""
    if percent is None:
        return None
    prompt = last_prompt_tokens(steps)
    if prompt is None or context_window is None or not should_compact(prompt, context_window, percent / 100):
        return None
    return AutoCompaction(prompt, context_window) if shrinks(active_context) else None
