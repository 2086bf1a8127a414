"""Every planner golden fixture of the reference, through the API and the command, with exactly the expected plan."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.core.session.builders import Call, SessionScript, current_configuration
from tests.core.session.reference import FIXTURES, PLANNER_CASES, PLANNER_FIXTURES, load_json
from tests.shared_data import shared_path
from tiny_agent_core.cli import main
from tiny_agent_core.session import facts, plan_recovery, reduce_session, validate_current

IDS = [case["name"] for case in PLANNER_CASES]


@pytest.fixture
def planner_folder() -> None:
    shared_path("reference", "schemas", "session", "planner-fixtures")


@pytest.mark.usefixtures("planner_folder")
@pytest.mark.parametrize("case", PLANNER_CASES, ids=IDS)
def test_planner_fixture_api(case: dict[str, Any]) -> None:
    given = load_json(PLANNER_FIXTURES / case["input"])
    state = reduce_session((FIXTURES / given["sessionFile"]).read_bytes())
    assert plan_recovery(state, validate_current(given["current"])) == load_json(PLANNER_FIXTURES / case["expected"])


@pytest.mark.usefixtures("planner_folder")
@pytest.mark.parametrize("case", PLANNER_CASES, ids=IDS)
def test_planner_fixture_command(case: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    given = load_json(PLANNER_FIXTURES / case["input"])
    current = tmp_path / "current.json"
    current.write_text(json.dumps(given["current"]), encoding="utf-8")
    code = main(["session", "plan", str(FIXTURES / given["sessionFile"]), "--current", str(current)])
    assert (code, json.loads(capsys.readouterr().out)) == (0, load_json(PLANNER_FIXTURES / case["expected"]))


@pytest.mark.usefixtures("planner_folder")
def test_planner_command_accepts_a_fixture_input_and_runs_as_a_process() -> None:
    case = next(case for case in PLANNER_CASES if case["name"] == "abort-mixed-tools")
    given = load_json(PLANNER_FIXTURES / case["input"])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tiny_agent_core",
            "session",
            "plan",
            str(FIXTURES / given["sessionFile"]),
            "--current",
            str(PLANNER_FIXTURES / case["input"]),
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, json.loads(result.stdout)) == (0, load_json(PLANNER_FIXTURES / case["expected"]))


def test_next_step_after_synthetic_results_starts_at_the_reducer_boundary() -> None:
    """A step whose last result is a pre-execution synthetic: the reference would plan an illegal boundary."""
    script = SessionScript()
    operation_id = script.run("go", [[Call("read"), Call("nope", "{}", outcome="unknownTool")]], finish="open")
    state = reduce_session(script.data())
    plan = plan_recovery(state, current_configuration())
    assert plan == {
        "type": "startStep",
        "stepKind": "assistant",
        "attempt": 1,
        "contextThroughEntryId": script.messages[-1][0],
    }
    # The plan is legal: writing the step it names is accepted.
    script.commit([script.step_attempt(operation_id, facts.new_id(), facts.new_id())])
    reduce_session(script.data())


def test_plan_command_errors_are_one_json_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = tmp_path / "s.jsonl"
    session.write_bytes(SessionScript().data())
    bad = tmp_path / "bad.json"
    bad.write_text('{"configurationDigest": "x"}', encoding="utf-8")
    assert main(["session", "plan", str(session), "--current", str(bad)]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "INVALID_CURRENT"
    assert main(["session", "plan", str(session), "--current", str(tmp_path / "missing.json")]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "FILE_UNREADABLE"
    good = tmp_path / "current.json"
    good.write_text(json.dumps(current_configuration()), encoding="utf-8")
    assert main(["session", "plan", str(tmp_path / "missing.jsonl"), "--current", str(good)]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "FILE_UNREADABLE"
    session.write_bytes(b"no header")
    assert main(["session", "plan", str(session), "--current", str(good)]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["code"], error["line"]) == ("MISSING_HEADER", 1)
    assert "no complete line (9 bytes)" in error["message"]
    session.write_bytes(SessionScript().data())
    assert main(["session", "plan", str(session), "--current", str(good)]) == 0
    assert json.loads(capsys.readouterr().out) == {"type": "finish", "outcome": "completed", "completion": "normal"}
