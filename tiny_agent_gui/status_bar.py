"""The status bar's words for usage, cost and speed: one definition of "input", unknown shown as "unknown".

"Input" is what the ledger calls input (SPEC §4): prompt tokens that were neither read from nor written to a
cache. Cache reads ("Cached") and writes sit beside it, never inside it, so ``Input 9.8k · Output 499 · Cached 31k
(76%) · $0.054`` adds up to what the provider billed; the tooltip spells out every bucket.

:class:`UsageLabel` shows a session's totals. :class:`SpeedLabel` follows the request in flight (``streaming ·
3.2 s · ≈41 tok/s``, estimated from the text received so far, about four characters a token) and, once the step
is recorded, the provider-reported figures (``2.1 s · TTFT 0.4 s · 38 tok/s``). :class:`ContextLabel` shows how
full the model's context window was at the last step (``context 3.1k / 4k (78%)``; ``context unknown`` when the
window is not known), in a warning colour from :data:`CONTEXT_WARNING` on. :class:`DelayedMessage` says what the
window is doing when it takes long enough to notice (opening a long session), and nothing when it is quick.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QStatusBar, QWidget

from tiny_agent_core.ledger.costs import sum_cost_text
from tiny_agent_core.usage import Usage
from tiny_agent_gui.cost.formatting import rate_text

__all__ = [
    "CHARS_PER_TOKEN",
    "CONTEXT_WARNING",
    "NOTICE_DELAY_MS",
    "ContextLabel",
    "DelayedMessage",
    "SessionFigures",
    "SpeedLabel",
    "UsageLabel",
    "compact_count",
    "context_text",
    "plural",
    "session_cost_text",
    "step_speed_text",
    "usage_text",
    "usage_tooltip",
    "window_text",
]

CHARS_PER_TOKEN = 4.0
"""The rough size of a token in characters, for the live estimate only (recorded figures are the provider's)."""

CONTEXT_WARNING = 0.85
"""From this share of the context window on, the context label is shown in the warning colour."""

NOTICE_DELAY_MS = 200
"""How long something must take before :class:`DelayedMessage` says it is going on."""

WARNING_COLOUR = "#d35400"
"""Readable on light and dark backgrounds alike."""


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``1 model``, ``2 models``, ``0 models`` (``plural_form`` for irregular words)."""
    word = singular if count == 1 else (plural_form or f"{singular}s")
    return f"{count:,} {word}"


def compact_count(count: int) -> str:
    """A token count in few characters: ``499``, ``9.8k``, ``31k``, ``1.2M``."""
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    if count < 1_000_000:
        return f"{round(count / 1000)}k"
    if count < 10_000_000:
        return f"{count / 1_000_000:.1f}M".replace(".0M", "M")
    return f"{round(count / 1_000_000)}M"


@dataclass(frozen=True)
class SessionFigures:
    """What the usage label shows for one session."""

    usage: Usage
    """Sums of the provider-reported usage facts."""
    requests: int
    """Model requests made (steps)."""
    unknown_usage: int
    """Answered requests whose provider reported no usage (not counted in :attr:`usage`)."""
    unanswered: int
    """Requests that failed or were stopped before an answer, with no usage reported."""
    cost: Decimal | None
    """Sum of the known request costs (``None``: none is known)."""
    unknown_cost: int
    """Requests whose cost is unknown."""
    last: Usage | None
    """The latest request's usage, if known."""
    cost_sources: frozenset[str] = frozenset()
    """Where the known costs came from (``local``, ``not_billed``, ``provider``, ``price_table``…)."""


def session_cost_text(figures: SessionFigures, *, unknown: str = "cost unknown") -> str:
    """The session's cost: ``$0.054``, ``≥ $0.05 + 2 unknown``, or — when every known cost is a local server's or a
    failed request's — ``local — no API charge`` / ``not billed`` rather than a bare ``$0.00``
    (:func:`~tiny_agent_core.ledger.costs.sum_cost_text`)."""
    return sum_cost_text(figures.cost, figures.unknown_cost, figures.cost_sources, unknown=unknown)


def usage_text(figures: SessionFigures) -> str:
    """``Input 9.8k · Output 499 · Cached 31k (76%) · $0.054``; ``Usage unknown`` when no request reported any."""
    usage = figures.usage
    if figures.unknown_usage and figures.unknown_usage == figures.requests - figures.unanswered:
        return f"Usage unknown · {session_cost_text(figures)}"
    parts = [f"Input {compact_count(usage.input)}", f"Output {compact_count(usage.output)}"]
    rate = usage.cache_hit_rate
    if usage.cache_read or usage.cache_write:
        cached = f"Cached {compact_count(usage.cache_read)}"
        if rate is not None:
            cached += f" ({round(rate * 100)}%)"
        parts.append(cached)
    if usage.cache_write:
        parts.append(f"Cache write {compact_count(usage.cache_write)}")
    parts.append(session_cost_text(figures))
    if figures.unknown_usage:
        parts.append(f"usage unknown for {plural(figures.unknown_usage, 'answer')}")
    return " · ".join(parts)


def usage_tooltip(figures: SessionFigures) -> str:
    """The breakdown behind :func:`usage_text`, every bucket in full with what it means."""
    usage = figures.usage
    last_rate = figures.last.cache_hit_rate if figures.last is not None else None
    lines = [
        f"This session: {plural(figures.requests, 'model request')}",
        f"Input (prompt tokens not read from or written to a cache): {usage.input:,}",
        f"Cached (prompt tokens read from the provider's cache): {usage.cache_read:,}",
        f"Cache write (prompt tokens written to the cache): {usage.cache_write:,}",
        f"Prompt tokens in all: {usage.prompt:,}",
        f"Output: {usage.output:,}",
        f"Cache hit rate: {rate_text(usage.cache_hit_rate)} this session, {rate_text(last_rate)} last request",
        f"Cost: {session_cost_text(figures, unknown='unknown')}",
    ]
    if figures.unknown_usage:
        lines.append(f"{plural(figures.unknown_usage, 'answer')} came without usage: unknown, not counted as zero.")
    if figures.unanswered:
        lines.append(f"{plural(figures.unanswered, 'request')} failed or stopped before an answer, without usage.")
    lines.append("Figures are the provider's own; nothing is counted locally.")
    return "\n".join(lines)


def _seconds(ms: float) -> str:
    """``2.1 s``; ``46 ms`` below a tenth of a second (never ``0.0 s``)."""
    return f"{ms:.0f} ms" if ms < 100 else f"{ms / 1000:.1f} s"


def step_speed_text(latency_ms: float | None, ttft_ms: float | None, output_tokens: int | None) -> str:
    """``2.1 s · TTFT 0.4 s · 38 tok/s`` for a finished step; missing figures are said to be unknown."""
    if latency_ms is None:
        return "Last step: time unknown"
    parts = [_seconds(latency_ms)]
    if ttft_ms is not None:
        parts.append(f"TTFT {_seconds(ttft_ms)}")
    if output_tokens is None:
        parts.append("output tokens unknown")
    else:
        generating = latency_ms - (ttft_ms or 0.0)
        if generating >= 50 and output_tokens > 0:  # a shorter span gives no meaningful rate
            parts.append(f"{output_tokens / (generating / 1000):.0f} tok/s")
    return " · ".join(parts)


class UsageLabel(QLabel):
    """The session's usage and cost in words, with a breakdown tooltip."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Session usage and cost")

    def show_figures(self, figures: SessionFigures | None) -> None:
        """Show ``figures`` (``None``: no session, the label is empty)."""
        if figures is None:
            self.clear()
            self.setToolTip("")
            self.setAccessibleDescription("")
            return
        self.setText(usage_text(figures))
        tip = usage_tooltip(figures)
        self.setToolTip(tip)
        self.setAccessibleDescription(tip)


class SpeedLabel(QLabel):
    """Elapsed time and speed of the request in flight, then of the last finished step."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Request speed")
        self.setContentsMargins(0, 0, 12, 0)  # apart from the usage figures beside it
        self._started: float | None = None
        self._first: float | None = None
        self._chars = 0
        self._timer = QTimer(self)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self._tick)

    @property
    def streaming(self) -> bool:
        """A request is in flight."""
        return self._started is not None

    def step_started(self) -> None:
        """A model request was sent: start the clock."""
        self._started = time.monotonic()
        self._first = None
        self._chars = 0
        self._timer.start()
        self._tick()

    def received(self, text: str) -> None:
        """Streamed text (or tool-call arguments) arrived; O(1)."""
        if self._started is None:
            return
        if self._first is None:
            self._first = time.monotonic()
        self._chars += len(text)

    def step_finished(self, latency_ms: float | None, ttft_ms: float | None, usage: Usage | None) -> None:
        """The step is recorded: show the provider-reported timing and output tokens."""
        self._stop()
        self.setText(step_speed_text(latency_ms, ttft_ms, usage.output if usage is not None else None))
        self.setToolTip(
            "Last model request: total time, time to first token (TTFT) and output tokens per second after the "
            "first token."
        )

    def stopped(self) -> None:
        """The operation ended (a failure or a stop leaves no step figures)."""
        if self._started is not None:
            self._stop()
            self.clear()

    def _stop(self) -> None:
        self._timer.stop()
        self._started = None

    def _tick(self) -> None:
        if self._started is None:
            return
        now = time.monotonic()
        elapsed = now - self._started
        if self._first is None:
            self.setText(f"waiting for the first token · {elapsed:.1f} s")
            return
        text = f"streaming · {elapsed:.1f} s"
        generating = now - self._first
        if generating >= 0.2 and self._chars:
            text += f" · ≈{self._chars / CHARS_PER_TOKEN / generating:.0f} tok/s"
        self.setText(text)
        self.setToolTip("Live estimate from the text received so far (about four characters a token).")


def window_text(tokens: int) -> str:
    """A context window's size as people name it: ``4k`` for 4096, ``128k`` for 131072, else :func:`compact_count`."""
    if tokens >= 1024 and tokens % 1024 == 0:
        kib = tokens // 1024
        return f"{kib // 1024}M" if kib >= 1024 and kib % 1024 == 0 else f"{kib}k"
    return compact_count(tokens)


def context_text(prompt: int | None, window: int | None) -> tuple[str, float | None]:
    """The context label's text and the share of the window used (``None`` when either number is unknown).

    ``prompt`` is the last step's prompt tokens (input plus cache reads and writes), ``window`` the model's context
    window in tokens.
    """
    if window is None:
        return "context unknown", None
    if prompt is None:
        return f"context – / {window_text(window)}", None
    share = prompt / window
    return f"context {compact_count(prompt)} / {window_text(window)} ({share:.0%})", share


class ContextLabel(QLabel):
    """How full the context window was at the last model step (its prompt tokens against the window)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Context used")
        self.setContentsMargins(0, 0, 12, 0)
        self.warning = False
        """The last step used at least :data:`CONTEXT_WARNING` of the window."""
        self.show_context(None, None)

    def show_context(self, prompt: int | None, window: int | None) -> None:
        """Show the last step's ``prompt`` tokens against the context ``window`` (either may be unknown)."""
        text, share = context_text(prompt, window)
        self.setText(text)
        self.warning = share is not None and share >= CONTEXT_WARNING
        self.setStyleSheet(f"color: {WARNING_COLOUR}; font-weight: bold;" if self.warning else "")
        if window is None:
            tip = (
                "The model's context window is not known: the server did not say. Set it in Settings › Providers "
                "(Context length)."
            )
        elif prompt is None:
            tip = f"The model's context window holds {window:,} tokens; no step has reported its prompt size yet."
        else:
            tip = f"The last model request's prompt took {prompt:,} of the {window:,} tokens of the context window."
            if self.warning:
                tip += " The window is nearly full: compact the session (/compact) or start a new one."
        self.setToolTip(tip)
        self.setAccessibleDescription(tip)


class DelayedMessage:
    """A status-bar message for work that may take a moment: shown only once the work has gone on for ``delay_ms``
    (a quick open flashes nothing), and cleared when it is done, unless another message has replaced it."""

    def __init__(self, bar: QStatusBar, delay_ms: int = NOTICE_DELAY_MS) -> None:
        self._bar = bar
        self._text = ""
        self._timer = QTimer(bar)
        self._timer.setSingleShot(True)
        self._timer.setInterval(delay_ms)
        self._timer.timeout.connect(lambda: bar.showMessage(self._text))

    def announce(self, text: str) -> None:
        """Work described by ``text`` has started (any earlier announcement is done)."""
        self.done()
        self._text = text
        self._timer.start()

    def done(self) -> None:
        """The announced work has ended: take its message away (if it was shown and is still there)."""
        self._timer.stop()
        if self._text and self._bar.currentMessage() == self._text:
            self._bar.clearMessage()
        self._text = ""
