"""Session files are read without blocking and without following links: a repository controls the folder."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tests.core.test_session_resume import _script, _write
from tiny_agent_core.errors import SessionError
from tiny_agent_core.ledger import connect, index_session_file, scan_workspace
from tiny_agent_core.session import SessionStore
from tiny_agent_core.session.store import read_session_file
from tiny_agent_core.timeline import Timeline


def _fifo_session(folder: Path) -> Path:
    """A FIFO with a session file's name: nothing will ever write to it, so a blocking open or read would hang."""
    path = _write(folder, _script(1).data())
    path.unlink()
    os.mkfifo(path)
    return path


def test_a_fifo_in_a_session_s_place_is_refused_read_only_without_blocking(tmp_path: Path) -> None:
    path = _fifo_session(tmp_path)
    with pytest.raises(SessionError, match="Not a regular file"):
        SessionStore.open(path, read_only=True)


def test_a_symbolic_link_in_a_session_s_place_is_refused_read_only(tmp_path: Path) -> None:
    link = _write(tmp_path / "sessions", _script(1).data())
    target = tmp_path / "elsewhere.jsonl"
    link.rename(target)
    link.symlink_to(target)
    with pytest.raises(OSError, match="symbolic links") as raised:
        SessionStore.open(link, read_only=True)
    assert raised.value.errno == errno.ELOOP  # O_NOFOLLOW


def test_a_session_file_is_read_from_an_offset_and_up_to_a_limit(tmp_path: Path) -> None:
    path = _write(tmp_path, _script(2).data())
    data = path.read_bytes()
    assert read_session_file(path) == data
    assert read_session_file(path, limit=10) == data[:10]
    assert read_session_file(path, start=5, limit=7) == data[5:12]
    assert read_session_file(path, start=len(data) - 3) == data[-3:]
    assert read_session_file(path, limit=0) == b""


def test_indexing_and_the_timeline_refuse_a_fifo_without_blocking(tmp_path: Path) -> None:
    path = _fifo_session(tmp_path / ".tiny-agent" / "sessions")
    conn = connect(tmp_path / "index.sqlite3")
    try:
        with pytest.raises(SessionError, match="Not a regular file"):
            index_session_file(conn, path, workspace=tmp_path)
        assert scan_workspace(conn, tmp_path).indexed == 0  # listed as not a regular file: skipped
    finally:
        conn.close()
    with pytest.raises(SessionError, match="Not a regular file"):
        Timeline.open_store(path, read_only=True)
