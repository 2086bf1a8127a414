"""How a tool call's outcome looks: one colour and one badge per outcome, shared by the cards and the waterfall.

Each colour carries white badge text in light and dark palettes alike; no two failure kinds share a colour, and
the badge's word (``exit 1``, ``denied``) says the same for anyone who does not see colours.
"""

from __future__ import annotations

from PySide6.QtGui import QColor

from tiny_agent_core.timeline import ToolItem

_COLOURS = {
    "ok": "#2e7d32",
    "exit": "#c62828",
    "timeout": "#a15c00",
    "error": "#d84315",
    "denied": "#6a1b9a",
    "interrupted": "#8d6e00",
    "not_run": "#616161",
    "running": "#1565c0",
    "pending": "#757575",
}

_MARKS = {
    "ok": "✓",
    "exit": "✗",
    "timeout": "⌛",
    "error": "!",
    "denied": "⊘",
    "interrupted": "↯",
    "not_run": "–",
    "running": "…",
    "pending": "○",
}


def _kind(item: ToolItem) -> str:
    return item.outcome.kind if item.outcome is not None else item.status


def outcome_colour(item: ToolItem) -> QColor:
    """The colour of the call's outcome (or of ``running``/``pending``)."""
    return QColor(_COLOURS.get(_kind(item), _COLOURS["not_run"]))


def outcome_mark(item: ToolItem) -> str:
    """One character for the outcome: ``✓``, ``✗``, ``⊘``, …"""
    return _MARKS.get(_kind(item), "•")


def badge_text(item: ToolItem) -> str:
    """A mark and a word or two: ``✓ ok``, ``✗ exit 1``, ``⊘ denied``, ``… running``."""
    label = item.outcome.label if item.outcome is not None else item.status
    return f"{outcome_mark(item)} {label}"
