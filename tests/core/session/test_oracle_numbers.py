"""``session check`` / ``session plan`` print strict JSON for any number in tool arguments, and the same values as
the TypeScript reference (``ts-oracle/runner.mjs``, run with node): a number that does not fit a double is
``null`` there (``JSON.stringify(Infinity)``), and here."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.core.session.builders import Call, SessionScript, current_configuration
from tests.shared_data import shared_path
from tiny_agent_core.cli import main

NUMBERS = {
    "huge-exponent": "1e400",
    "negative-huge-exponent": "-1e400",
    "5000-digit-integer": "9" * 5000,
    "401-digit-integer": "1" + "0" * 400,
    "underflow": "1e-400",
    "beyond-2^53": "12345678901234567890",
    "large-but-finite": "1.5e300",
}


def strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def as_doubles(value: Any) -> Any:
    """Numbers compared as the doubles JavaScript holds (``12345678901234567890`` prints differently)."""
    if isinstance(value, dict):
        return {key: as_doubles(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_doubles(item) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


def started_with(number: str) -> bytes:
    """A run whose started ``read`` has ``n`` = ``number`` in its recorded arguments (replayed by the planner)."""
    script = SessionScript()
    script.run("p", [[Call("read", '{"path":"a"}', "x", "pending")]], finish="open")
    return script.data().replace(b'"arguments":{"path":"a"}', b'"arguments":{"path":"a","n":' + number.encode() + b"}")


def called_with(number: str) -> bytes:
    """A run whose last assistant message calls ``read`` with ``n`` = ``number`` (started by the planner)."""
    script = SessionScript()
    script.run("p", [[Call("read", '{"path":"a","n":' + number + "}", outcome="invalidArguments")]], finish="open")
    return b"".join(line + b"\n" for line in script.lines[:-1])  # without the synthetic result


BUILDS = {"recorded": started_with, "called": called_with}
CASES = [f"{build}-{name}" for build in BUILDS for name in NUMBERS]


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, Any, Any]]:
    """Per case: the session file, the current configuration, and the reference's check and plan output (one
    node process for all checks and one for all plans)."""
    runner = shared_path("reference", "ts-oracle", "runner.mjs")
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the TypeScript reference cannot run")
    folder = tmp_path_factory.mktemp("oracle-numbers")
    current = folder / "current.json"
    current.write_text(json.dumps(current_configuration()), encoding="utf-8")
    sessions = []
    for build, make in BUILDS.items():
        for name, number in NUMBERS.items():
            session = folder / f"{build}-{name}.jsonl"
            session.write_bytes(make(number))
            sessions.append(session)
    (folder / "check.txt").write_text("".join(f"{path}\n" for path in sessions), encoding="utf-8")
    (folder / "plan.tsv").write_text("".join(f"{path}\t{current}\n" for path in sessions), encoding="utf-8")
    for command, listing in (("batch-check", "check.txt"), ("batch-plan", "plan.tsv")):
        subprocess.run(
            ["node", str(runner), command, str(folder / listing), str(folder / f"{command}.jsonl")],
            check=True,
            timeout=120,
            capture_output=True,
        )
    checks = [json.loads(line) for line in (folder / "batch-check.jsonl").read_text(encoding="utf-8").splitlines()]
    plans = [json.loads(line) for line in (folder / "batch-plan.jsonl").read_text(encoding="utf-8").splitlines()]
    return {path.stem: (path, current, check, plan) for path, check, plan in zip(sessions, checks, plans, strict=True)}


def run_ours(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    main(list(args))
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return strict(out)


@pytest.mark.parametrize("case", CASES)
def test_check_and_plan_print_the_references_values_as_strict_json(
    case: str, oracle: dict[str, tuple[Path, Path, Any, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    session, current, reference_check, reference_plan = oracle[case]
    ours = run_ours(capsys, "session", "check", str(session))
    assert ours["ok"] is True
    assert as_doubles(ours) == as_doubles(reference_check)
    plan = run_ours(capsys, "session", "plan", str(session), "--current", str(current))
    assert plan["type"] == "startTool"
    assert as_doubles(plan) == as_doubles(reference_plan)
    if case.endswith(("huge-exponent", "5000-digit-integer", "401-digit-integer")):
        assert plan["arguments"]["n"] is None


@pytest.mark.parametrize("number", NUMBERS.values(), ids=NUMBERS.keys())
def test_output_is_strict_json_without_the_reference(
    number: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same commands in a plain clone (no node, no ../shared): always strict JSON, never ``Infinity``."""
    session = tmp_path / "session.jsonl"
    session.write_bytes(started_with(number))
    current = tmp_path / "current.json"
    current.write_text(json.dumps(current_configuration()), encoding="utf-8")
    check = run_ours(capsys, "session", "check", str(session))
    plan = run_ours(capsys, "session", "plan", str(session), "--current", str(current))
    recorded = check["state"]["operation"]["toolCalls"][0]["arguments"]["n"]
    assert recorded == plan["arguments"]["n"]
    assert recorded is None or abs(recorded) < float("inf")
