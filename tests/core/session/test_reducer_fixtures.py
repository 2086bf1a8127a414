"""Every reducer golden fixture of the reference, through the API, with exactly the expected result."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.session.reference import FIXTURES, REDUCER_CASES, error_json, load_json
from tests.shared_data import shared_path
from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session import reduce_session, state_to_json


def reduce_to_golden(data: bytes) -> dict[str, Any]:
    try:
        return {"ok": True, "state": state_to_json(reduce_session(data))}
    except SessionCorruption as error:
        return error_json(error)


@pytest.mark.parametrize("case", REDUCER_CASES, ids=[case["name"] for case in REDUCER_CASES])
def test_reducer_fixture(case: dict[str, Any]) -> None:
    shared_path("reference", "schemas", "session", "fixtures")
    data = (FIXTURES / case["file"]).read_bytes()
    assert reduce_to_golden(data) == load_json(FIXTURES / case["expected"])


def test_every_fixture_file_is_covered() -> None:
    folder = shared_path("reference", "schemas", "session", "fixtures")
    listed = {case["file"] for case in REDUCER_CASES}
    planner_only = {"abort-mixed-tools.jsonl", "duplicate-provider-call-id-across-assistants.jsonl"}
    assert {path.name for path in folder.glob("*.jsonl")} == listed | planner_only
