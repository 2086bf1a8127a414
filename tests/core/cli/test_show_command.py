"""``tiny-agent session show`` on a session that ``tiny-agent run`` wrote (in-process, loopback provider)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests.core.agent.conftest import text_reply, tool_reply
from tests.core.cli.conftest import Cli
from tests.loopback import LoopbackServer
from tiny_agent_core.cli.show import add_show_command


def _show(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="tiny-agent session")
    add_show_command(parser.add_subparsers(dest="session_command", required=True))
    parsed = parser.parse_args(["show", *args])
    code = parsed.handler(parsed)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def session_file(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greet.py").write_text('def greet(name):\n    return "Hello " + name\n')
    edit = {"path": "greet.py", "edits": [{"oldText": '"Hello " + name', "newText": 'f"Hello, {name}!"'}]}
    env = {"TEST_KEY": "sk-show-0123456789abcdefghij", "TINY_AGENT_DATA_DIR": str(tmp_path / "data")}
    with LoopbackServer() as server:
        server.queue(
            tool_reply(
                ("c1", "read", '{"path": "greet.py"}'),
                ("c2", "edit", json.dumps(edit)),
                ("c3", "bash", '{"command": "echo out; exit 1"}'),
                ("c4", "bash", '{"command": "git push --force origin main"}'),
            ),
            tool_reply(("c5", "bash", '{"command": "ls"}')),
            text_reply("Done."),
        )
        proc = cli(
            "run", "--workspace", str(workspace), "--base-url", server.base_url, "--model", "m",
            "--api-key-env", "TEST_KEY", "--allow", "read", "--allow", "edit", "fix greet", env=env,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))
    (path,) = (workspace / ".tiny-agent" / "sessions").glob("*.jsonl")
    return path


def test_json_trace_of_a_run(session_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _show(capsys, "--json", str(session_file))
    assert code == 0
    trace = json.loads(out)
    assert trace["sessionId"] in session_file.name
    steps = trace["steps"]
    assert [step["stopReason"] for step in steps] == ["toolUse", "toolUse", "stop"]
    first = steps[0]
    assert first["model"] == "m"
    assert first["usage"] == {"input": 20, "output": 5, "cacheRead": 0, "cacheWrite": 0}
    assert first["cost"] == "0"  # the loopback endpoint is a local server: no API charge (not unknown)
    assert isinstance(first["latencyMs"], int)  # from the ledger the run wrote
    calls = {call["id"]: call for call in first["toolCalls"]}
    assert calls["c1"]["outcome"] == "ok"
    assert calls["c1"]["summary"] == "read greet.py · 2 lines"
    assert calls["c2"]["outcome"] == "ok"
    assert calls["c2"]["diff"] == {"added": 1, "removed": 1}
    assert calls["c2"]["summary"] == "edit greet.py +1 \u22121"
    assert calls["c3"]["outcome"] == "not_run"  # bash was not offered
    assert calls["c3"]["reason"] == "unknown tool"
    assert "exitCode" not in calls["c3"]
    assert "diff" not in calls["c1"]
    assert isinstance(calls["c1"]["durationMs"], int)
    assert calls["c3"]["durationMs"] is None


def test_text_trace_and_a_foreign_session(
    session_file: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = _show(capsys, str(session_file))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("session ")
    assert lines[1].startswith("run 1: fix greet · ")
    assert lines[2].startswith("  step m · toolUse · ttft ")
    assert "    [ok] edit greet.py +1 \u22121 · " in out
    assert "    [not run] bash echo out; exit 1 → not run: unknown tool" in out
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "elsewhere"))  # no ledger: what another client sees
    code, out, _ = _show(capsys, "--json", str(session_file))
    step = json.loads(out)["steps"][0]
    assert (step["latencyMs"], step["ttftMs"], step["cost"]) == (None, None, None)
    assert isinstance(step["durationMs"], int)  # from the file's own timestamps
    assert not (tmp_path / "elsewhere").exists()  # a read-only command creates no database


def test_unreadable_and_corrupt_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _show(capsys, str(tmp_path / "missing.jsonl"))
    assert (code, out) == (2, "")
    assert err.startswith("tiny-agent: cannot read ")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    code, _, err = _show(capsys, str(bad))
    assert code == 2
    assert "is not a valid session" in err
