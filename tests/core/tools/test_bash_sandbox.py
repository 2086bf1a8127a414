"""bash in the bubblewrap sandbox: no keys in the child's reach, a read-only system with a writable workspace,
the network switch, and the unsandboxed fallback."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.tools.sleepers import needs_sandbox
from tiny_agent_core.tools import BashTool, BgTool, builtin_tools
from tiny_agent_core.tools.sandbox import Confinement, sandbox_status

CANARIES = {"MY_PROVIDER_KEY": f"sk-canary-{uuid.uuid4().hex}", "OPENAI_API_KEY": f"sk-canary-{uuid.uuid4().hex}"}


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    return list(CANARIES.values())


async def run(tool: BashTool, command: str) -> str:
    outcome = await tool.execute({"command": command, "timeout": 60})
    assert not outcome.is_error, outcome.content
    return outcome.content


def test_the_tool_reports_whether_it_is_sandboxed(tmp_path: Path) -> None:
    assert BashTool(tmp_path).sandbox == sandbox_status()
    off = BashTool(tmp_path, sandbox=False).sandbox
    assert not off.available
    assert off.reason == "the sandbox is turned off for this workspace"


@needs_sandbox
@pytest.mark.parametrize(
    "command",
    ["env", "cat /proc/$PPID/environ", "cat /proc/1/environ", "cat /proc/1/cmdline", "cat /proc/*/environ"],
)
async def test_keys_are_out_of_reach_in_the_sandbox(command: str, canaries: list[str], tmp_path: Path) -> None:
    text = await run(BashTool(tmp_path), f"{command}; cat /proc/{os.getpid()}/environ")
    assert "PATH=" in text or "bwrap" in text  # the command ran and printed something
    for canary in canaries:
        assert canary not in text


async def test_keys_are_not_in_the_unsandboxed_environment(canaries: list[str], tmp_path: Path) -> None:
    text = await run(BashTool(tmp_path, sandbox=False), "env")
    assert "PATH=" in text
    for canary in canaries:
        assert canary not in text


@pytest.mark.parametrize("sandbox", [pytest.param(False, id="unsandboxed"), pytest.param(True, marks=needs_sandbox)])
async def test_configured_variables_pass_but_secret_looking_ones_do_not(sandbox: bool, tmp_path: Path) -> None:
    tool = BashTool(tmp_path, sandbox=sandbox, extra_env={"PROJECT_MODE": "dev", "GITHUB_TOKEN": "ghp-canary"})
    text = await run(tool, "env")
    assert "PROJECT_MODE=dev\n" in text
    assert "ghp-canary" not in text


@needs_sandbox
async def test_writes_outside_the_workspace_fail(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    in_home = Path.home() / f".tiny-agent-sandbox-test-{uuid.uuid4().hex}"
    beside = tmp_path / "beside"  # under /tmp, which is private in the sandbox
    try:
        text = await run(BashTool(workspace), f"echo ok > inside; touch {in_home}; echo x > {beside}; echo done")
        assert "Read-only file system" in text
        assert text.startswith("done\n")
        assert not in_home.exists()
        assert not beside.exists()
        assert (workspace / "inside").read_text() == "ok\n"
    finally:
        in_home.unlink(missing_ok=True)


@needs_sandbox
async def test_allowed_roots_are_writable_and_tmp_is_private(tmp_path: Path) -> None:
    workspace, other = tmp_path / "workspace", tmp_path / "other"
    workspace.mkdir()
    other.mkdir()
    host_file = Path("/tmp") / f"tiny-agent-host-{uuid.uuid4().hex}"
    host_file.write_text("host")
    try:
        tool = BashTool(workspace, writable_roots=[other])
        text = await run(tool, f'echo ok > {other}/note; echo "$TMPDIR"; test -e {host_file} || echo private')
    finally:
        host_file.unlink()
    assert (other / "note").read_text() == "ok\n"
    assert text == "/tmp\nprivate\n"


@needs_sandbox
async def test_spilled_output_is_reported_at_its_host_path(tmp_path: Path) -> None:
    text = await run(BashTool(tmp_path), "seq 1 3000")
    note = text.rsplit("\n\n", 1)[1]
    path = Path(note.split("Full output: ", 1)[1].removesuffix("]"))
    assert path.parent == tmp_path / ".tiny-agent" / "tool-output"
    assert path.read_text().splitlines()[-1] == "3000"


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def connect(port: int) -> str:
    script = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=10); print('connected')"
    # The interpreter itself, not the venv's link to it: a venv under /tmp is hidden by the sandbox's private /tmp.
    return f'{os.path.realpath(sys.executable)} -c "{script}"'


@needs_sandbox
async def test_network_off_blocks_a_local_listener(listener: int, tmp_path: Path) -> None:
    text = await run(BashTool(tmp_path, network=False), connect(listener))
    assert "connected" not in text
    assert "ConnectionRefusedError" in text or "OSError" in text


@pytest.mark.parametrize("sandbox", [pytest.param(False, id="unsandboxed"), pytest.param(True, marks=needs_sandbox)])
async def test_network_on_reaches_a_local_listener(sandbox: bool, listener: int, tmp_path: Path) -> None:
    assert await run(BashTool(tmp_path, sandbox=sandbox), connect(listener)) == "connected\n"


@needs_sandbox
async def test_a_signal_death_is_reported_as_the_shell_does(tmp_path: Path) -> None:
    assert await run(BashTool(tmp_path), "kill -9 $$") == "Command exited with code 137"


async def test_the_builder_passes_the_workspace_options_to_bash_and_bg(tmp_path: Path) -> None:
    workspace, other = tmp_path / "workspace", tmp_path / "other"
    workspace.mkdir()
    other.mkdir()
    tools = {
        tool.name: tool
        for tool in builtin_tools(
            workspace, allowed_roots=[other], extra_env={"PROJECT_MODE": "dev"}, sandbox=False, network=False
        )
    }
    for name in ("bash", "bg"):
        tool = tools[name]
        assert isinstance(tool, BashTool | BgTool)
        assert tool.confinement == Confinement(
            (workspace.resolve(), other.resolve()), {"PROJECT_MODE": "dev"}, sandboxed=False, network=False
        )
        assert not tool.sandbox.available
    bash = tools["bash"]
    assert isinstance(bash, BashTool)
    assert "PROJECT_MODE=dev\n" in await run(bash, "env")


@needs_sandbox
async def test_a_slow_sandbox_set_up_is_not_charged_to_the_command_s_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = shutil.which("bwrap")
    assert real is not None
    slow = tmp_path / "bin" / "bwrap"  # a busy machine: the sandbox takes 0.5 s to set up
    slow.parent.mkdir()
    slow.write_text(f'#!/bin/sh\nsleep 0.5\nexec {real} "$@"\n')
    slow.chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow.parent}{os.pathsep}{os.environ['PATH']}")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outcome = await BashTool(workspace).execute({"command": "printf partial; sleep 5", "timeout": 0.3})
    assert outcome.content == "partial\n\nCommand timed out after 0.3 seconds."
