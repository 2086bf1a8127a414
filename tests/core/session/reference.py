"""The reference's golden session fixtures in ../shared (never copied into the project)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.shared_data import SHARED
from tiny_agent_core.errors import SessionCorruption

FIXTURES = SHARED / "reference" / "schemas" / "session" / "fixtures"
PLANNER_FIXTURES = SHARED / "reference" / "schemas" / "session" / "planner-fixtures"


def _manifest(folder: Path) -> list[dict[str, Any]]:
    path = folder / "manifest.json"
    if not path.is_file():
        return []
    fixtures: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["fixtures"]
    return fixtures


REDUCER_CASES = _manifest(FIXTURES)
"""Entries of ``fixtures/manifest.json``: ``name``, ``file``, ``expected``, ``schemaValid``."""
PLANNER_CASES = _manifest(PLANNER_FIXTURES)
"""Entries of ``planner-fixtures/manifest.json``: ``name``, ``input``, ``expected``."""


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def error_json(error: SessionCorruption) -> dict[str, Any]:
    """The golden ``{"ok": false, "error": …}`` form of a corruption."""
    out: dict[str, Any] = {"code": error.code, "line": error.line}
    if error.seq is not None:
        out["seq"] = error.seq
    return {"ok": False, "error": out}
