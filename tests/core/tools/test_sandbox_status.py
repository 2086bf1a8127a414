"""The sandbox probe: a reason a user can act on when bwrap is missing or cannot start, and the tools still run."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tiny_agent_core.tools import BashTool
from tiny_agent_core.tools.sandbox import SandboxStatus, sandbox_status


@pytest.fixture(autouse=True)
def fresh_probe() -> Iterator[None]:
    sandbox_status.cache_clear()
    yield
    sandbox_status.cache_clear()


def test_the_probe_is_cached() -> None:
    assert sandbox_status() is sandbox_status()


async def test_missing_bwrap_says_how_to_install_it_and_bash_still_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    status = sandbox_status()
    assert status == SandboxStatus(False, status.reason)
    assert status.reason is not None
    assert "apt-get install bubblewrap" in status.reason
    tool = BashTool(tmp_path)
    assert tool.sandbox == status
    assert (await tool.execute({"command": "echo hi"})).content == "hi\n"


def test_a_bwrap_that_cannot_start_says_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda name: str(fake) if name == "bwrap" else None)
    status = sandbox_status()
    assert not status.available
    assert status.reason is not None
    assert "No permissions to create new namespace" in status.reason
    assert "user namespaces" in status.reason
