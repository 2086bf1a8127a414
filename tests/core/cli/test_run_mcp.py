"""``tiny-agent run --mcp-config FILE --mcp ALIAS``: MCP tools in a ``run`` (loopback provider, the stdio test server
of ``tests/core/mcp/server_app.py`` as a real child process).

The runs call the command in-process (``cli`` in conftest.py), except the two that ask which modules a fresh
``tiny-agent`` process imports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.core.agent.conftest import text_reply, tool_reply
from tests.core.cli.conftest import Cli, CliResult
from tests.loopback import LoopbackServer
from tiny_agent_core.mcp.names import function_name
from tiny_agent_core.session.reducer import reduce_session

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]  # every test runs MCP servers as processes

KEY = "sk-run-mcp-secret-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[3]
ECHO = str(function_name("t", "echo"))
SERVER = {"command": sys.executable, "args": ["-m", "tests.core.mcp.server_app", "stdio"], "cwd": str(ROOT)}
"""The stdio test server as a catalog entry."""

_PROBE = """
import json
import sys
from tiny_agent_core.cli import main
code = main(sys.argv[1:])
loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("mcp", "mcp_types"))
print("SDK-MODULES " + json.dumps(loaded), file=sys.stderr)
sys.exit(code)
"""
"""``tiny-agent`` that says, as its last stderr line, which modules of the MCP SDK it imported."""


Run = Callable[..., tuple[CliResult, list[str]]]
"""The ``run`` fixture: ``run(server, *args)``."""


def _changes(tmp_path: Path) -> dict[str, str]:
    """The environment of a run: the key in ``TEST_KEY``, the test's data and config folders, no proxy."""
    return {
        "TEST_KEY": KEY,
        "TINY_AGENT_DATA_DIR": str(tmp_path / "data"),
        "TINY_AGENT_CONFIG_DIR": str(tmp_path / "config"),
        "NO_PROXY": "*",
    }


def _argv(tmp_path: Path, server: LoopbackServer, *args: str) -> list[str]:
    return ["run", "--workspace", str(tmp_path / "ws"), "--base-url", server.base_url, "--model", "m",
            "--api-key-env", "TEST_KEY", *args]  # fmt: skip


@pytest.fixture
def run(cli: Cli, tmp_path: Path) -> Run:
    """``tiny-agent run`` in-process in the workspace ``tmp_path/ws``: the result and its stderr lines."""

    def call(server: LoopbackServer, *args: str) -> tuple[CliResult, list[str]]:
        proc = cli(*_argv(tmp_path, server, *args), env=_changes(tmp_path))
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc, proc.stderr.strip().splitlines()

    return call


def _probe(tmp_path: Path, server: LoopbackServer, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """``tiny-agent run`` as a real process that reports the SDK modules it loaded: the process and its stderr lines."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *_argv(tmp_path, server, *args)],
        capture_output=True, text=True, env={**os.environ, **_changes(tmp_path)}, cwd=ROOT, timeout=150, check=False,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, proc.stderr.strip().splitlines()


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """A catalog (Claude Desktop's format) with the test server as ``t`` (calls time out after 1.5 s) and one that
    exits at start as ``dead``; the workspace ``tmp_path/ws`` made."""
    (tmp_path / "ws").mkdir()
    dead = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}
    servers = {"t": {**SERVER, "callTimeoutMs": 1500}, "dead": dead}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers, "globalShortcut": "ignored"}))
    return path


def _sessions(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "ws" / ".tiny-agent" / "sessions").glob("*.jsonl"))


def test_an_allowed_mcp_call_is_answered_and_offered_beside_the_builtins(
    run: Run, tmp_path: Path, catalog: Path
) -> None:
    with LoopbackServer() as server:
        server.queue(tool_reply(("c1", ECHO, '{"text": "from the model"}')), text_reply("Echoed."))
        proc, lines = run(
            server, "--mcp-config", str(catalog), "--mcp", "t", "--allow", "read", "--allow", "mcp:t",
            "echo something",
        )  # fmt: skip
        offered = [tool["function"]["name"] for tool in server.requests[0].json()["tools"]]
        answer = server.requests[1].json()["messages"][-1]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Echoed."
    assert offered[0] == "read"
    assert ECHO in offered
    assert len(offered) == 1 + 8  # read and the server's eight tools
    assert answer == {"role": "tool", "content": 'from the model\n\n{"result": "from the model"}', "tool_call_id": "c1"}
    assert any(line.startswith('◆ mcp:t/echo {"text": "from the model"}') for line in lines), lines
    summary = json.loads(lines[-1])
    assert summary["outcome"] == "completed"
    (path,) = _sessions(tmp_path)
    facts = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    records = [f["record"] for v in facts for f in (v if isinstance(v, list) else [v]) if f["kind"] == "record"]
    assert [(r["toolName"], r["replay"]) for r in records if r["type"] == "toolStarted"] == [(ECHO, "never")]


def test_allowing_one_tool_denies_the_others_with_the_allow_that_would_do(
    run: Run, tmp_path: Path, catalog: Path
) -> None:
    fail = str(function_name("t", "fail"))
    with LoopbackServer() as server:
        server.queue(
            tool_reply(("c1", ECHO, '{"text": "ok"}'), ("c2", fail, '{"message": "x"}')), text_reply("One of two.")
        )
        proc, lines = run(server, "--mcp-config", str(catalog), "--mcp", "t", "--allow", "mcp:t/echo", "try both")
        offered = [tool["function"]["name"] for tool in server.requests[0].json()["tools"]]
        echoed, denied = server.requests[1].json()["messages"][-2:]
    assert proc.returncode == 0, proc.stderr
    assert fail in offered  # every tool of a connected server is offered; only the allowed ones run
    assert echoed["content"].startswith("ok")
    assert denied["content"] == (
        "Error: Tool call denied; the tool was not executed. Reason: mcp:t/fail is not allowed in this "
        "non-interactive run (allow it with --allow mcp:t/fail)."
    )
    assert json.loads(lines[-1])["outcome"] == "completed"


def test_an_mcp_call_without_an_allow_is_denied(run: Run, tmp_path: Path, catalog: Path) -> None:
    with LoopbackServer() as server:
        server.queue(tool_reply(("c1", ECHO, '{"text": "x"}')), text_reply("Denied then."))
        proc, _ = run(server, "--mcp-config", str(catalog), "--mcp", "t", "try it")
        offered = [tool["function"]["name"] for tool in server.requests[0].json()["tools"]]
        denied = server.requests[1].json()["messages"][-1]["content"]
    assert proc.returncode == 0, proc.stderr
    assert "read" not in offered  # no built-in allowed, none offered
    assert ECHO in offered
    assert "--allow mcp:t/echo" in denied
    assert denied.startswith("Error: Tool call denied")


@pytest.mark.parametrize(
    ("remote", "expected"),
    [("crash", "Error: MCP server t"), ("hang", "Error: MCP server t did not answer within 1500 ms")],
)
def test_a_server_that_crashes_or_hangs_mid_call_is_an_error_result(
    run: Run, tmp_path: Path, catalog: Path, remote: str, expected: str
) -> None:
    name = str(function_name("t", remote))
    with LoopbackServer() as server:
        server.queue(tool_reply(("c1", name, "{}")), text_reply("Noted."))
        proc, lines = run(server, "--mcp-config", str(catalog), "--mcp", "t", "--allow", "mcp:t", "call")
        result = server.requests[1].json()["messages"][-1]["content"]
    assert proc.returncode == 0, proc.stderr
    assert result.startswith(expected), result
    assert json.loads(lines[-1])["outcome"] == "completed"


def test_a_server_that_fails_to_start_exits_2_and_creates_no_session(run: Run, tmp_path: Path, catalog: Path) -> None:
    with LoopbackServer() as server:
        proc, lines = run(server, "--mcp-config", str(catalog), "--mcp", "t", "--mcp", "dead", "hi")
        requests = len(server.requests)
    assert proc.returncode == 2
    assert len(lines) == 1, lines
    error = json.loads(lines[0])["error"]
    assert (error["kind"], error["alias"], error["cause"]) == ("mcp", "dead", "connection_failed")
    assert error["message"].startswith("MCP server dead: ")
    assert requests == 0
    assert _sessions(tmp_path) == []


def test_an_allow_that_covers_no_offered_tool_exits_2(run: Run, tmp_path: Path, catalog: Path) -> None:
    with LoopbackServer() as server:
        proc, lines = run(server, "--mcp-config", str(catalog), "--mcp", "t", "--allow", "mcp:t/nope", "hi")
    assert proc.returncode == 2
    assert len(lines) == 1, lines
    error = json.loads(lines[0])["error"]
    assert (error["kind"], error["cause"]) == ("mcp", "not_offered")
    assert "mcp:t/nope" in error["message"]
    assert _sessions(tmp_path) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mcp", "t"], "--mcp needs --mcp-config FILE"),
        (["--allow", "mcp:t"], "--allow mcp:t: the MCP server is not connected (add --mcp t)"),
        (["--allow", "mcp:"], "argument --allow: 'mcp:' must be mcp:ALIAS or mcp:ALIAS/TOOL"),
        (["--allow", "mcp:t/"], "argument --allow: 'mcp:t/' must be mcp:ALIAS or mcp:ALIAS/TOOL"),
        (["--allow", "grep"], "argument --allow: 'grep' is not a tool"),
        (["--mcp-config", "CATALOG", "--mcp", "nope"], "unknown MCP server: nope (the catalog has: t, dead)"),
        (["--mcp-config", "MISSING", "--mcp", "t"], "the MCP catalog"),
        (["--mcp-config", "BROKEN", "--mcp", "t"], "the MCP catalog is not valid JSON"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    run: Run, tmp_path: Path, catalog: Path, args: list[str], message: str
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"servers": ')
    paths = {"CATALOG": str(catalog), "MISSING": str(tmp_path / "missing.json"), "BROKEN": str(broken)}
    with LoopbackServer() as server:
        proc, lines = run(server, *(paths.get(arg, arg) for arg in args), "hi")
        requests = len(server.requests)
    assert proc.returncode == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith("tiny-agent run: error: "), lines
    assert message in lines[0], lines
    assert requests == 0
    assert not (tmp_path / "ws" / ".tiny-agent").exists()
    assert not (tmp_path / "data").exists()  # the index is not touched either


def test_a_run_without_mcp_does_not_import_the_sdk(tmp_path: Path, catalog: Path) -> None:
    with LoopbackServer() as server:
        server.queue(text_reply("plain"), text_reply("still plain"))
        plain, plain_lines = _probe(tmp_path, server, "--allow", "read", "hello")
        # a catalog named but no server chosen: read and checked, still no SDK
        named, named_lines = _probe(tmp_path, server, "--mcp-config", str(catalog), "hello")
    assert plain.returncode == 0, plain.stderr
    assert named.returncode == 0, named.stderr
    assert plain_lines[-1] == "SDK-MODULES []"
    assert named_lines[-1] == "SDK-MODULES []"


def test_a_run_with_mcp_does_import_the_sdk(tmp_path: Path, catalog: Path) -> None:
    """The probe of the test above sees the SDK when it is loaded."""
    with LoopbackServer() as server:
        server.queue(text_reply("with tools"))
        proc, lines = _probe(tmp_path, server, "--mcp-config", str(catalog), "--mcp", "t", "hello")
    assert proc.returncode == 0, proc.stderr
    assert lines[-1].startswith("SDK-MODULES [")
    assert json.loads(lines[-1].removeprefix("SDK-MODULES ")) != []


def test_a_failed_connect_leaves_a_continued_session_untouched(run: Run, tmp_path: Path, catalog: Path) -> None:
    with LoopbackServer() as server:
        server.queue(text_reply("first"))
        proc, lines = run(server, "first prompt")
        assert proc.returncode == 0, proc.stderr
        session_id = json.loads(lines[-1])["sessionId"]
        (path,) = _sessions(tmp_path)
        before = path.read_bytes()
        proc, lines = run(server, "--session", session_id, "--mcp-config", str(catalog), "--mcp", "dead", "second")
    assert proc.returncode == 2
    assert json.loads(lines[-1])["error"]["kind"] == "mcp"
    assert path.read_bytes() == before
    assert reduce_session(before).operation.kind == "idle"
