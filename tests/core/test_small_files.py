"""Side files a repository can plant beside a session (metadata, fork origin, copies, costs): a FIFO, a symlink to
something else or an oversized file is ignored — listing and costing the workspace neither hangs nor follows it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tiny_agent_core.cli import main
from tiny_agent_core.fork import copies_path, origin_path, read_copies, read_origin
from tiny_agent_core.ledger.sidecar import append as append_cost
from tiny_agent_core.ledger.sidecar import read as read_costs
from tiny_agent_core.ledger.sidecar import sidecar_path
from tiny_agent_core.session_meta import meta_path, read_meta
from tiny_agent_core.small_files import read_small_file

pytestmark = pytest.mark.timeout(60)  # a blocking open would hang the test, not fail it


def test_only_a_small_regular_file_is_read(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_bytes(b"12345")
    assert read_small_file(plain, 5) == b"12345"
    assert read_small_file(plain, 4) is None  # larger than the limit
    assert read_small_file(tmp_path / "missing.json", 10) is None
    link = tmp_path / "link.json"
    link.symlink_to(plain)
    assert read_small_file(link, 10) is None  # a symlink is not followed
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert read_small_file(fifo, 10) is None  # a FIFO is not waited on
    assert read_small_file(tmp_path, 10) is None  # nor a folder


def test_planted_side_files_are_ignored_and_the_workspace_still_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    session = SessionFile(workspace, 1, created_at=1_764_547_200_000, model="vendor/model-a")
    session.user("hello")
    session.attempt()
    session.answer("hi", usage=(10, 2, 0, 0))
    costs = sidecar_path(session.path)
    costs.parent.mkdir(parents=True, exist_ok=True)
    for planted in (meta_path(session.path), origin_path(session.path), copies_path(session.path), costs):
        os.mkfifo(planted)
    assert read_meta(session.path).title is None
    assert read_origin(session.path) is None
    assert read_copies(session.path) == {}
    assert read_costs(session.path) == {}
    assert main(["sessions", "--workspace", str(workspace)]) == 0
    assert "hello" in capsys.readouterr().out
    assert main(["cost", "--workspace", str(workspace)]) == 0


def test_a_cost_line_is_never_appended_through_a_planted_link_or_to_a_fifo(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    session = SessionFile(workspace, 1, created_at=1_764_547_200_000, model="vendor/model-a")
    session.user("hello")
    victim = tmp_path / "bashrc"
    victim.write_text("export PATH\n")
    costs = sidecar_path(session.path)
    costs.parent.mkdir(parents=True, exist_ok=True)
    costs.symlink_to(victim)  # a repository's link where the app appends what a request cost
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        append_cost(session.path, "01a23308-9c82-773f-92fc-6c1cfe6e9881", local=True)
    assert victim.read_text() == "export PATH\n"
    costs.unlink()
    os.mkfifo(costs)  # opening it for writing would wait for a reader forever
    with pytest.raises(OSError, match="No such device or address"):
        append_cost(session.path, "01a23308-9c82-773f-92fc-6c1cfe6e9881", local=True)
    costs.unlink()
    costs.parent.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    costs.parent.symlink_to(elsewhere, target_is_directory=True)  # the folder itself leads out
    with pytest.raises(OSError, match=r"Too many levels of symbolic links|Not a directory"):
        append_cost(session.path, "01a23308-9c82-773f-92fc-6c1cfe6e9881", local=True)
    assert list(elsewhere.iterdir()) == []
    costs.parent.unlink()
    append_cost(session.path, "01a23308-9c82-773f-92fc-6c1cfe6e9881", local=True)  # a real side file works
    assert read_costs(session.path)["01a23308-9c82-773f-92fc-6c1cfe6e9881"].local
    assert stat.S_IMODE(costs.stat().st_mode) == 0o600
