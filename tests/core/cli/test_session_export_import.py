"""``tiny-agent session export`` and ``session import``: one JSON line, exit codes, nothing written on a rejection."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tiny_agent_core.cli import main
from tiny_agent_core.ledger import connect, get_session

T0 = 1_760_000_000_000


@pytest.fixture(autouse=True)
def _data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(tmp_path / "config"))


def _session(folder: Path) -> SessionFile:
    session = SessionFile(folder, 7, created_at=T0, model="vendor/model-a")
    session.user("Explain the parser")
    session.attempt()
    session.answer("It reads tokens.", usage=(100, 10, 0, 0))
    return session


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_export_markdown_to_stdout_and_to_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    session = _session(tmp_path / "ws")
    code, out, err = _run(capsys, "session", "export", str(session.path))
    assert (code, err) == (0, "")
    assert out.startswith("# Explain the parser\n")
    assert "| Cost | unknown |" in out  # no index database: never a made-up cost
    assert not (tmp_path / "data").exists()  # export never creates the index
    target = tmp_path / "out.md"
    code, out, _ = _run(capsys, "session", "export", str(session.path), "-o", str(target))
    assert code == 0
    assert json.loads(out) == {"ok": True, "path": str(target), "format": "md", "bytes": target.stat().st_size}
    assert target.read_text(encoding="utf-8").startswith("# Explain the parser\n")


def test_export_jsonl_is_the_file_itself(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    session = _session(tmp_path / "ws")
    target = tmp_path / "copy.jsonl"
    code, out, _ = _run(capsys, "session", "export", "--format", "jsonl", str(session.path), "-o", str(target))
    assert code == 0
    assert json.loads(out)["format"] == "jsonl"
    assert target.read_bytes() == session.path.read_bytes()


def test_export_failures_are_one_json_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "session", "export", str(tmp_path / "missing.jsonl"))
    assert code == 2
    assert json.loads(out)["error"]["code"] == "FILE_UNREADABLE"
    session = _session(tmp_path / "ws")
    code, out, _ = _run(capsys, "session", "export", str(session.path), "-o", str(tmp_path / "no" / "such" / "x.md"))
    assert code == 2
    error = json.loads(out)["error"]
    assert error["code"] == "FILE_UNWRITABLE"
    assert "choose another place" in error["message"]


def test_import_validates_copies_and_indexes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    session = _session(tmp_path / "elsewhere")
    workspace = tmp_path / "project"
    workspace.mkdir()
    code, out, err = _run(capsys, "session", "import", str(session.path), "--workspace", str(workspace))
    assert (code, err) == (0, "")
    result = json.loads(out)
    assert result["ok"] is True
    assert result["sessionId"] == session.id
    assert result["copiedAsNew"] is False
    assert Path(result["path"]).read_bytes() == session.path.read_bytes()
    conn = connect()
    try:
        assert get_session(conn, session.id) is not None
    finally:
        conn.close()
    code, out, _ = _run(capsys, "session", "import", str(session.path), "--workspace", str(workspace))
    assert code == 0
    assert json.loads(out)["copiedAsNew"] is True


def test_import_of_a_mutated_file_prints_the_reducers_error_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session = _session(tmp_path / "elsewhere")
    lines = session.path.read_text().splitlines()
    lines[1] = lines[1].replace('"role":"user"', '"role":"wizard"')
    mutated = tmp_path / "mutated.jsonl"
    mutated.write_text("\n".join(lines) + "\n")
    workspace = tmp_path / "project"
    workspace.mkdir()
    code, out, _ = _run(capsys, "session", "import", str(mutated), "--workspace", str(workspace))
    assert code == 2
    error = json.loads(out)["error"]
    check_code, check_out, _ = _run(capsys, "session", "check", str(mutated))
    assert check_code == 2
    assert error == json.loads(check_out)["error"]  # the same verdict as `session check`
    assert error["line"] == 2
    assert list(workspace.rglob("*.jsonl")) == []


def test_session_check_still_imports_no_export_machinery(tmp_path: Path) -> None:
    code = (
        "import sys; sys.argv = ['tiny-agent', 'session', 'check', sys.argv[1]]\n"
        "from tiny_agent_core.cli import main\n"
        "main()\n"
        "extra = sorted(m for m in ('tiny_agent_core.export', 'tiny_agent_core.timeline', 'tiny_agent_core.ledger',"
        " 'sqlite3') if m in sys.modules)\n"
        "print(extra, file=sys.stderr)"
    )
    session = _session(tmp_path / "ws")
    proc = subprocess.run(
        [sys.executable, "-c", code, str(session.path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.stderr.strip().splitlines()[-1] == "[]"
