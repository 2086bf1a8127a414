"""The cost side file of a session: what only the live request knew about its cost, kept beside the session file.

A session file (v2) records every request's usage and model, so the index prices it again at any time from the
price table; what it cannot hold is the provider's own figure (OpenRouter ``usage.cost``) and whether the server
was local (a custom base URL on this machine). The agent's ledger writes those here as it records each request,
so that a deleted or rebuilt index still knows them.

The side file lives strictly outside the v2 format and outside the sessions folder, so the reference CLIs never
see it: ``<workspace>/.tiny-agent/costs/<session file name without .jsonl>.costs`` (not ``.jsonl``). Each line is
one JSON object ``{"attemptId": "<uuid>", "providerCost": "<decimal string>"}`` or ``{"attemptId": "<uuid>",
"local": true}``; a later line for the same attempt adds to (or replaces) an earlier one. Unreadable files and
lines are skipped: the side file only ever adds knowledge, and without it the cost is priced from the table.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from tiny_agent_core.small_files import read_small_file
from tiny_agent_core.tools.private_files import open_private_folder, open_regular

SUFFIX = ".costs"
"""Extension of a cost side file."""
COSTS_FOLDER = ".tiny-agent/costs"
"""Where the side files are, relative to the workspace."""


@dataclass(frozen=True, slots=True)
class LiveCost:
    """What the side file says about one request."""

    provider_cost: Decimal | None = None
    """The provider's own figure, if it sent one."""
    local: bool = False
    """The request went to a server on this machine or the local network."""


MAX_SIDECAR_BYTES = 64 * 1024 * 1024
"""A cost side file larger than this (≈400,000 requests' lines) is not read: its costs are recomputed instead."""


def sidecar_path(session_path: Path) -> Path:
    """Where the side file of the session file ``session_path`` (``<workspace>/.tiny-agent/sessions/x.jsonl``) is."""
    return session_path.parent.parent.parent / COSTS_FOLDER / (session_path.stem + SUFFIX)


def append(session_path: Path, attempt_id: str, *, provider_cost: Decimal | None = None, local: bool = False) -> None:
    """Add one line for ``attempt_id`` (nothing when there is nothing to keep). Raises ``OSError``."""
    line: dict[str, object] = {"attemptId": attempt_id}
    if provider_cost is not None:
        line["providerCost"] = format(provider_cost, "f")
    if local:
        line["local"] = True
    if len(line) == 1:
        return
    data = (json.dumps(line, separators=(",", ":")) + "\n").encode("utf-8")
    # The workspace is the repository's: a link planted at the side file or its folder (to ~/.bashrc, say) must not
    # get lines appended, and a FIFO must not block. So the folder is walked without following links and the file
    # must be a regular file of its own (as the process tools keep their files).
    with open_private_folder(session_path.parent.parent.parent, COSTS_FOLDER) as folder:
        descriptor = open_regular(folder, session_path.stem + SUFFIX, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(descriptor, data)
    finally:
        os.close(descriptor)


def read(session_path: Path) -> dict[str, LiveCost]:
    """The side file's knowledge by attempt id (empty when there is no side file or it cannot be read)."""
    data = read_small_file(sidecar_path(session_path), MAX_SIDECAR_BYTES)
    if data is None:
        return {}
    text = data.decode("utf-8", errors="replace")
    found: dict[str, LiveCost] = {}
    for line in text.splitlines():
        try:
            value = json.loads(line)
            attempt_id = value["attemptId"]
            cost = value.get("providerCost")
            amount = None if cost is None else Decimal(cost)
        except (ValueError, TypeError, KeyError, InvalidOperation):
            continue  # a torn or foreign line: skip it
        if not isinstance(attempt_id, str) or (amount is not None and (not amount.is_finite() or amount < 0)):
            continue
        before = found.get(attempt_id, LiveCost())
        found[attempt_id] = LiveCost(
            amount if amount is not None else before.provider_cost, before.local or value.get("local") is True
        )
    return found
