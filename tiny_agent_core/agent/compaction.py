"""Compaction (``/compact``), as the reference does it (notes §7.3): where to cut and what to ask the model.

The cut is taken over the active context: keep at least the last 6 messages, then move the cut back until it
sits on a user message, so the retained tail starts a turn. The durable source is every message entry; the last
``retained`` of them are kept verbatim, the rest are replaced by the model's summary.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

KEEP_AT_LEAST = 6
"""Messages always kept verbatim at the end of the active context."""

COMPACTION_PROMPT = (
    "You compact the history of a coding-agent session. Summarize the conversation you are given compactly but "
    "completely: the user's goals, decisions taken, files created or changed, commands run and their important "
    "results, errors met, and the next steps. Write plain text; do not call tools."
)
"""The system prompt of a compaction request (no tools are offered)."""


@dataclass(frozen=True)
class CompactionCut:
    """How a compaction splits the active context."""

    cut: int
    """Active-context messages before this index are summarized."""
    retained: int
    """Messages kept verbatim (the last message entries)."""


def compaction_cut(active_context: Sequence[dict[str, Any]]) -> CompactionCut | None:
    """Where to cut ``active_context``; ``None`` when there is nothing to compact."""
    cut = len(active_context) - KEEP_AT_LEAST
    while cut > 0 and active_context[cut].get("role") != "user":
        cut -= 1
    if cut <= 0:
        return None
    return CompactionCut(cut, len(active_context) - cut)


def compaction_messages(active_context: Sequence[dict[str, Any]], cut: CompactionCut) -> list[dict[str, Any]]:
    """The request: the compaction system prompt and one user message holding the messages to summarize."""
    history = json.dumps(list(active_context[: cut.cut]), ensure_ascii=False)
    return [{"role": "system", "content": COMPACTION_PROMPT}, {"role": "user", "content": history}]
