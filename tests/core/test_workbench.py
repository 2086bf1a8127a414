"""The workbench: sessions open writable, or read-only with a reason when another writer holds them."""

from __future__ import annotations

from pathlib import Path

from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.workbench import create_session, open_session


def test_a_session_held_by_another_writer_opens_read_only_with_a_reason(tmp_path: Path) -> None:
    first = create_session(tmp_path, custom_profile("http://127.0.0.1:9/v1"), "m")
    assert not first.read_only
    assert first.workspace == tmp_path.resolve()
    second = open_session(first.store.path)
    assert second.read_only
    assert second.read_only_reason is not None
    assert "read-only" in second.read_only_reason
    assert second.store.session_id == first.store.session_id
    first.store.close()
    third = open_session(first.store.path)
    assert not third.read_only
    third.store.close()
    second.store.close()
