"""Every reducer golden fixture of the reference, through the API and the command, with exactly the expected result."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.core.session.reference import FIXTURES, REDUCER_CASES, error_json, load_json
from tests.shared_data import shared_path
from tiny_agent_core.cli import main
from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session import reduce_session, state_to_json

IDS = [case["name"] for case in REDUCER_CASES]


def reduce_to_golden(data: bytes) -> dict[str, Any]:
    try:
        return {"ok": True, "state": state_to_json(reduce_session(data))}
    except SessionCorruption as error:
        return error_json(error)


@pytest.fixture
def fixtures_folder() -> None:
    shared_path("reference", "schemas", "session", "fixtures")


@pytest.mark.usefixtures("fixtures_folder")
@pytest.mark.parametrize("case", REDUCER_CASES, ids=IDS)
def test_reducer_fixture_api(case: dict[str, Any]) -> None:
    data = (FIXTURES / case["file"]).read_bytes()
    assert reduce_to_golden(data) == load_json(FIXTURES / case["expected"])


@pytest.mark.usefixtures("fixtures_folder")
@pytest.mark.parametrize("case", REDUCER_CASES, ids=IDS)
def test_reducer_fixture_command(case: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    expected = load_json(FIXTURES / case["expected"])
    code = main(["session", "check", str(FIXTURES / case["file"])])
    out = capsys.readouterr().out
    assert json.loads(out) == expected
    assert out.count("\n") == 1  # exactly one JSON object
    assert code == (0 if expected["ok"] else 2)


@pytest.mark.usefixtures("fixtures_folder")
@pytest.mark.parametrize("case", REDUCER_CASES, ids=IDS)
def test_reducer_fixture_summary(case: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    expected = load_json(FIXTURES / case["expected"])
    code = main(["session", "check", "--summary", str(FIXTURES / case["file"])])
    out = json.loads(capsys.readouterr().out)
    if not expected["ok"]:
        assert (code, out) == (2, expected)
        return
    state = reduce_session((FIXTURES / case["file"]).read_bytes())
    assert code == 0
    assert out == {
        "ok": True,
        "facts": state.fact_count,
        "operation": expected["state"]["operation"]["kind"],
        "usage": expected["state"]["usage"],
    }


@pytest.mark.usefixtures("fixtures_folder")
@pytest.mark.parametrize("name", ["completed-compaction", "duplicate-json-key", "torn-tail"])
def test_reducer_fixture_subprocess(name: str) -> None:
    case = next(case for case in REDUCER_CASES if case["name"] == name)
    expected = load_json(FIXTURES / case["expected"])
    result = subprocess.run(
        [sys.executable, "-m", "tiny_agent_core", "session", "check", str(FIXTURES / case["file"])],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert json.loads(result.stdout) == expected
    assert result.returncode == (0 if expected["ok"] else 2)
    assert result.stderr == b""


def test_every_fixture_file_is_covered() -> None:
    folder = shared_path("reference", "schemas", "session", "fixtures")
    listed = {case["file"] for case in REDUCER_CASES}
    planner_only = {"abort-mixed-tools.jsonl", "duplicate-provider-call-id-across-assistants.jsonl"}
    assert {path.name for path in folder.glob("*.jsonl")} == listed | planner_only
