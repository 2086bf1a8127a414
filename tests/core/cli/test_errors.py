"""Every ``tiny-agent`` error is one line on stderr and exit 2, never a traceback.

Most tests call the command in-process (``cli`` in conftest.py); a closed stdout, what a start imports and a usage
error of the index commands are real subprocesses.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.core.agent.conftest import text_reply
from tests.core.cli.conftest import Cli, CliResult
from tests.core.ledger.sessionfiles import SessionFile
from tests.loopback import LoopbackServer
from tiny_agent_core.cli import main
from tiny_agent_core.cli import price as price_command
from tiny_agent_core.cli import run as run_command
from tiny_agent_core.ledger import connect
from tiny_agent_core.session.store import SessionStore

ROOT = Path(__file__).resolve().parents[3]


def _changes(tmp_path: Path) -> dict[str, str | None]:
    """The environment of every command here: no proxy, no debugging, the test's data folder and key."""
    unset: dict[str, str | None] = {k: None for k in os.environ if "proxy" in k.lower() or k == "TINY_AGENT_DEBUG"}
    return {**unset, "TINY_AGENT_DATA_DIR": str(tmp_path / "data"), "NO_PROXY": "*", "TEST_KEY": "sk-test-0123456789"}


def _env(tmp_path: Path) -> dict[str, str]:
    """:func:`_changes` applied to this process's environment, for a child process."""
    env = {**os.environ, **_changes(tmp_path)}
    return {k: v for k, v in env.items() if v is not None}


@pytest.fixture
def tiny_agent(cli: Cli, tmp_path: Path) -> Callable[..., CliResult]:
    """``tiny-agent *args`` in-process with :func:`_changes` (``stdin=``: what it reads)."""

    def run(*args: str, stdin: str = "") -> CliResult:
        return cli(*args, env=_changes(tmp_path), stdin=stdin)

    return run


def _process(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``tiny-agent *args`` as a real process, with :func:`_env`."""
    return subprocess.run(
        [sys.executable, "-m", "tiny_agent_core", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def _run_args(workspace: Path, base_url: str, *extra: str) -> list[str]:
    return ["run", "--workspace", str(workspace), "--base-url", base_url, "--model", "m", *extra, "hello"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["chat", "--base-url", "http://[::1", "hi"], "Invalid IPv6 URL"),
        (["chat", "--base-url", "http://127.0.0.1:99999/v1", "--model", "m", "hi"], "Port out of range"),
        (["chat", "--base-url", "http://127.0.0.1:0/v1", "--model", "m", "hi"], "port 0"),
        (["chat", "--base-url", "ftp://example.com/v1", "--model", "m", "hi"], "http:// or https://"),
        (["chat", "--base-url", "http:///v1", "--model", "m", "hi"], "no valid host"),
        (["chat", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "nan", "hi"], "above 0"),
        (["wire", "normalize", "--status", "99999", "-"], "between 100 and 599"),
        (["wire", "normalize", "--status", "abc", "-"], "not an HTTP status code"),
        (["index", "rebuild", "--workspace", "nonexistent-folder"], "nonexistent-folder does not exist"),
    ],
)
def test_bad_values_are_one_line_usage_errors(
    tiny_agent: Callable[..., CliResult], args: list[str], expected: str
) -> None:
    _assert_usage_error(tiny_agent(*args, stdin="{}"), args[0], expected)


def test_a_usage_error_of_a_real_process_is_one_line(tmp_path: Path) -> None:
    """As above, from ``python -m tiny_agent_core`` (the index commands' real-process test)."""
    args = ["index", "rebuild", "--workspace", "nonexistent-folder"]
    _assert_usage_error(_process(tmp_path, *args, stdin="{}"), "index", "nonexistent-folder does not exist")


def _assert_usage_error(proc: CliResult | subprocess.CompletedProcess[str], command: str, expected: str) -> None:
    assert proc.returncode == 2
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"tiny-agent {command}")
    assert ": error: " in line
    assert expected in line
    assert ".." not in line


@pytest.mark.parametrize(
    ("base_url", "extra", "expected"),
    [
        ("http://[::1", [], "Invalid IPv6 URL"),
        ("http://127.0.0.1:99999/v1", [], "Port out of range"),
        ("http://127.0.0.1:9/v1", ["--timeout", "nan"], "above 0"),
        ("http://127.0.0.1:9/v1", ["--timeout", "-1"], "above 0"),
        ("http://127.0.0.1:9/v1", ["--timeout", "inf"], "above 0"),
        ("http://127.0.0.1:9/v1", ["--max-steps", "0"], "at least 1"),
    ],
)
def test_run_rejects_bad_values_before_creating_a_session(
    tiny_agent: Callable[..., CliResult], workspace: Path, base_url: str, extra: list[str], expected: str
) -> None:
    proc = tiny_agent(*_run_args(workspace, base_url, *extra))
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("tiny-agent run: error: ")
    assert expected in line
    assert not (workspace / ".tiny-agent").exists()


def test_run_in_a_missing_workspace(tiny_agent: Callable[..., CliResult], tmp_path: Path) -> None:
    proc = tiny_agent(*_run_args(tmp_path / "nowhere", "http://127.0.0.1:9/v1"))
    assert proc.returncode == 2
    assert proc.stderr == f"tiny-agent run: error: argument --workspace: {tmp_path / 'nowhere'} does not exist\n"


def test_unusable_index_fails_the_run_before_the_session_exists(
    tiny_agent: Callable[..., CliResult], tmp_path: Path, workspace: Path
) -> None:
    (tmp_path / "data").write_text("a file where the data folder should be")
    proc = tiny_agent(*_run_args(workspace, "http://127.0.0.1:9/v1"))
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    error = json.loads(line)["error"]
    assert error["kind"] == "index"
    assert "Could not create the index database" in error["message"]
    assert not (workspace / ".tiny-agent").exists()


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["whole file", "middle page"])
def test_damaged_index_is_rebuilt_for_sessions_rebuild_and_run(
    tiny_agent: Callable[..., CliResult], tmp_path: Path, workspace: Path, damage: str
) -> None:
    for number in range(1, 40):
        session = SessionFile(workspace, number, created_at=1_760_000_000_000 + number)
        session.user(f"question {number} " + "words " * 300)
    assert tiny_agent("sessions", "--workspace", str(workspace)).returncode == 0
    database = tmp_path / "data" / "index.sqlite3"
    size = database.stat().st_size
    with open(database, "r+b") as handle:
        if damage == "middle page":
            handle.seek((size // 4096 // 2) * 4096)
        handle.write(os.urandom(size if damage == "whole file" else 4096))
    notice = "tiny-agent: The index database could not be used"

    listed = tiny_agent("sessions", "--workspace", str(workspace), "--json")
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr.count(notice) == 1
    assert len(json.loads(listed.stdout)) == 39

    with open(database, "r+b") as handle:
        handle.write(os.urandom(4096))
    rebuilt = tiny_agent("index", "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert rebuilt.stderr.count(notice) == 1
    assert json.loads(rebuilt.stdout)["corrupt"] == []

    with open(database, "r+b") as handle:
        handle.write(os.urandom(4096))
    with LoopbackServer() as server:
        server.queue(text_reply("fine"))
        ran = tiny_agent(*_run_args(workspace, server.base_url))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "fine"
    assert ran.stderr.count(notice) == 1
    assert "Traceback" not in ran.stderr
    assert json.loads(ran.stderr.splitlines()[-1])["outcome"] == "completed"
    moved = [p for p in (tmp_path / "data").glob("index.sqlite3.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(moved) == 3
    final = tiny_agent("sessions", "--workspace", str(workspace), "--json")
    assert (final.returncode, final.stderr) == (0, "")
    assert len(json.loads(final.stdout)) == 40


def test_version(tiny_agent: Callable[..., CliResult]) -> None:
    proc = tiny_agent("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("tiny-agent ")
    assert proc.stdout.split()[1][0].isdigit()


@pytest.mark.parametrize(
    "args",
    [
        ["session", "check", "SESSION"],
        ["sessions", "--json", "--workspace", "WORKSPACE"],
        ["price", "--provider", "openai", "--model", "gpt-4o", "--input", "1", "--output", "1"],
        ["--help"],
    ],
)
def test_closed_stdout_ends_quietly(tmp_path: Path, workspace: Path, args: list[str]) -> None:
    session = SessionFile(workspace, 1, created_at=1_760_000_000_000)
    session.user("x " * 50_000)
    argv = [{"SESSION": str(session.path), "WORKSPACE": str(workspace)}.get(arg, arg) for arg in args]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tiny_agent_core", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
        cwd=ROOT,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the command writes anything
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) in (0, 2)
    assert stderr == ""


def test_unexpected_failure_is_one_json_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, root_logger: logging.Logger
) -> None:
    def broken(**_: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.delenv("TINY_AGENT_DEBUG", raising=False)
    monkeypatch.setattr(price_command, "price_request", broken)
    code = main(["price", "--provider", "openai", "--model", "gpt-4o", "--input", "1", "--output", "1"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    (line,) = err.splitlines()
    error = json.loads(line)["error"]
    assert error["kind"] == "internal"
    assert error["message"].startswith("unexpected RuntimeError: boom second line (this is a bug; run again with")


@pytest.fixture
def root_logger() -> Iterator[logging.Logger]:
    """The root logger, restored afterwards (``main`` configures it)."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield root
    root.setLevel(level)
    root.handlers[:] = handlers


def test_debug_shows_the_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, root_logger: logging.Logger
) -> None:
    def broken(**_: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setenv("TINY_AGENT_DEBUG", "1")
    monkeypatch.setattr(price_command, "price_request", broken)
    code = main(["price", "--provider", "openai", "--model", "gpt-4o", "--input", "1", "--output", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" in err
    assert json.loads(err.splitlines()[-1])["error"]["kind"] == "internal"


def test_index_failure_during_a_run_is_one_line_and_not_fatal(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = connect(tmp_path / "index.sqlite3")
    store = SessionStore.create(workspace, model="m", provider="custom")
    try:
        ledger = run_command._Ledger(conn, store.path, workspace, [])
        assert capsys.readouterr().err == ""
        conn.close()  # from here on every index call fails, as with a file damaged during the run
        ledger.close()
        ledger.close()
    finally:
        store.close()
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("tiny-agent: the index stopped recording this run (")
    assert "`tiny-agent index rebuild`" in line


def test_a_small_session_check_loads_neither_httpx_nor_pydantic_nor_the_agent(tmp_path: Path) -> None:
    """Only the module of the command being run is imported: ``session check`` stays a fast start."""
    code = (
        "import sys; sys.argv = ['tiny-agent', 'session', 'check', sys.argv[1]]\n"
        "from tiny_agent_core.cli import main\n"
        "main()\n"
        "heavy = sorted(m for m in ('httpx', 'pydantic', 'tiny_agent_core.agent.loop') if m in sys.modules)\n"
        "print(heavy, file=sys.stderr)"
    )
    session = tmp_path / "empty.jsonl"
    session.write_text("")
    proc = subprocess.run(
        [sys.executable, "-c", code, str(session)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.stderr.strip().splitlines()[-1] == "[]"
