"""``tiny-agent compare`` end to end against the loopback server with scripted models.

The two-model run is a real subprocess; the other tests call the command in-process (``cli`` in conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.core.cli.conftest import Cli, CliResult
from tests.loopback import LoopbackServer, Reply
from tests.scripted_models import ScriptedModels, answer, tool_call
from tiny_agent_core.comparisons import list_comparisons
from tiny_agent_core.session import reduce_session
from tiny_agent_core.settings import AppSettings, ProfileConfig

ROOT = Path(__file__).resolve().parents[3]
LINE_KEYS = {"model", "sessionId", "outcome", "steps", "wallMs", "usage", "cost", "filesChanged"}


def _environment(tmp_path: Path, server: LoopbackServer) -> dict[str, str]:
    config = tmp_path / "config"
    settings = AppSettings.load(config)
    settings.add_profile(ProfileConfig.custom("loop", server.base_url, name="Loop"))
    settings.save()
    return {"TINY_AGENT_DATA_DIR": str(tmp_path / "data"), "TINY_AGENT_CONFIG_DIR": str(config), "NO_PROXY": "*"}


def _compare_process(env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``tiny-agent compare`` as a real process with ``env`` added to this one's environment."""
    proc = subprocess.run(
        [sys.executable, "-m", "tiny_agent_core", "compare", *args],
        capture_output=True, text=True, env={**os.environ, **env}, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


Compare = Callable[..., CliResult]
"""The ``compare`` fixture: ``compare(env, *args)``."""


@pytest.fixture
def compare(cli: Cli) -> Compare:
    """``tiny-agent compare`` in-process with ``env`` set."""

    def call(env: Mapping[str, str], *args: str) -> CliResult:
        proc = cli("compare", *args, env=env)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    return call


def _lines(proc: CliResult | subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _edit(call_id: str, new: str) -> Reply:
    return tool_call(call_id, "edit", {"path": "greet.py", "edits": [{"oldText": "hi", "newText": new}]})


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greet.py").write_text("print('hi')\n")
    return workspace


def test_two_models_write_two_sessions_in_two_copies_and_leave_the_workspace_alone(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with LoopbackServer() as server:
        server.handler = ScriptedModels(
            {
                "model-a": [_edit("a1", "hello"), answer("Changed it to hello.")],
                "model-b": [_edit("b1", "hey"), answer("Changed it to hey.")],
            }
        )
        env = _environment(tmp_path, server)
        proc = _compare_process(
            env, "--workspace", str(workspace), "--model", "loop/model-a", "--model", "loop/model-b",
            "--allow", "edit", "greet better",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "greet.py").read_text() == "print('hi')\n"
    assert sorted(path.name for path in workspace.iterdir()) == ["greet.py"]
    first, second = _lines(proc)
    assert first.keys() >= LINE_KEYS
    assert [first["model"], second["model"]] == ["loop/model-a", "loop/model-b"]
    assert first["outcome"] == second["outcome"] == "completed"
    assert first["steps"] == 2
    assert first["usage"] == {"input": 100, "output": 14, "cacheRead": 0, "cacheWrite": 0}
    assert first["cost"] == "0"  # a loopback server: local, no API charge
    assert first["costSources"] == ["local"]
    assert first["filesChanged"] == [{"path": "greet.py", "status": "modified", "added": 1, "removed": 1}]
    assert first["tools"] == {"ok": 1}
    assert isinstance(first["wallMs"], int)
    assert first["comparisonId"] == second["comparisonId"]
    copies = [Path(first["copy"]), Path(second["copy"])]
    assert copies[0] != copies[1]
    assert (copies[0] / "greet.py").read_text() == "print('hello')\n"
    assert (copies[1] / "greet.py").read_text() == "print('hey')\n"
    for line, copy in zip((first, second), copies, strict=True):
        (session,) = (copy / ".tiny-agent" / "sessions").glob(f"*_{line['sessionId']}.jsonl")
        assert reduce_session(session.read_bytes()).operation.kind == "idle"
    assert f"comparison {first['comparisonId']}" in proc.stderr
    (saved,) = list_comparisons(tmp_path / "data" / "compare")
    assert saved.id == first["comparisonId"]
    assert saved.prompt == "greet better"
    assert saved.ended_at is not None
    assert [report.status for report in saved.reports] == ["completed", "completed"]


def test_a_failed_run_exits_2_and_still_reports_every_model(compare: Compare, tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with LoopbackServer() as server:
        server.handler = ScriptedModels(
            {
                "model-a": [answer("Nothing to change.")],
                "model-b": [Reply.error(400, {"error": {"message": "model-b does not exist"}})],
            }
        )
        proc = compare(
            _environment(tmp_path, server), "--workspace", str(workspace),
            "--model", "loop/model-a", "--model", "loop/model-b", "hi",
        )  # fmt: skip
    assert proc.returncode == 2
    first, second = _lines(proc)
    assert (first["outcome"], second["outcome"]) == ("completed", "failed")
    assert "model-b does not exist" in second["error"]
    assert first["filesChanged"] == []


def test_a_risky_call_is_denied_without_allow_risky(compare: Compare, tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with LoopbackServer() as server:
        scripts = {
            model: [tool_call("r1", "bash", {"command": "rm -rf ."}), answer("done")]
            for model in ("model-a", "model-b")
        }
        server.handler = ScriptedModels(scripts)
        proc = compare(
            _environment(tmp_path, server), "--workspace", str(workspace),
            "--model", "loop/model-a", "--model", "loop/model-b", "--allow", "bash", "clean up",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for line in _lines(proc):
        assert line["tools"] == {"denied": 1}
        assert (Path(line["copy"]) / "greet.py").exists()


def test_usage_errors_exit_2_with_one_line(compare: Compare, tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with LoopbackServer() as server:
        env = _environment(tmp_path, server)
        cases = {
            ("--model", "loop/a"): "give 2 to 4 --model P/M, not 1",
            ("--model", "loop/a", "--model", "loop/a"): "the same --model is given twice",
            ("--model", "loop/a", "--model", "nowhere/b"): "no provider profile 'nowhere' (profiles: loop)",
            ("--model", "loop/a", "--model", "loop"): "is not PROFILE/MODEL",
        }
        for args, message in cases.items():
            proc = compare(env, "--workspace", str(workspace), *args, "hi")
            assert proc.returncode == 2
            assert proc.stderr.startswith("tiny-agent compare: error: ")
            assert message in proc.stderr
            assert len(proc.stderr.splitlines()) == 1
        assert server.requests == []
    assert not (tmp_path / "data" / "compare").exists()
