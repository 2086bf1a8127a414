"""The key store against a real OS keyring (Secret Service via gnome-keyring), when one is running.

CI runs the suite inside ``dbus-run-session`` with an unlocked gnome-keyring (see .ci/run), so this test talks to
the real Secret Service there; on a machine without a keyring it skips with the reason. It is marked ``os_keyring``:
the suite's keyring isolation (tests/conftest.py) leaves keyring's own backend in place for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tiny_agent_core.secrets import KeyStore


@pytest.mark.os_keyring
def test_a_key_round_trips_through_the_os_keyring(tmp_path: Path) -> None:
    store = KeyStore(service="tiny-agent-desktop-test")
    if not store.available:
        pytest.skip(f"no OS keyring here: {store.status().reason}")
    secret = "sk-or-v1-0123456789abcdef_~+/=" + tmp_path.name
    profile_id = f"profile-{tmp_path.name}"
    store.set(profile_id, secret)
    try:
        assert KeyStore(service="tiny-agent-desktop-test").get(profile_id) == secret
        assert store.has_key(profile_id)
    finally:
        store.delete(profile_id)
    assert store.get(profile_id) is None
