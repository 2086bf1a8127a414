"""The window's key cache: a profile's key is read from the OS keyring once, ahead and off the GUI thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.core.test_secrets import LockedKeyring, MemoryKeyring, use_keyring
from tiny_agent_core.errors import SecretStoreError
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import ProfileConfig
from tiny_agent_gui.window_connection import KeyCache

OPENAI = ProfileConfig.from_preset("openai", "openai")
SECRET = "sk-test-0123456789"


class CountingKeyStore(KeyStore):
    """A key store that records the thread of every read."""

    def __init__(self) -> None:
        super().__init__(environ={"OTHER_KEY": "sk-from-env"})
        self.threads: list[threading.Thread] = []

    def key_for(self, profile: ProfileConfig) -> str | None:
        self.threads.append(threading.current_thread())
        return super().key_for(profile)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    yield from use_keyring(backend)  # type: ignore[misc]


def test_a_key_is_read_once_until_the_cache_is_cleared(memory_keyring: MemoryKeyring) -> None:
    store = CountingKeyStore()
    store.set("openai", SECRET)
    cache = KeyCache(store)
    assert cache.key_for(OPENAI) == SECRET
    assert cache.key_for(OPENAI) == SECRET
    assert len(store.threads) == 1
    store.set("openai", SECRET + "-new")  # the settings dialog saved a new key
    cache.clear()
    assert cache.key_for(OPENAI) == SECRET + "-new"
    assert len(store.threads) == 2


def test_a_profile_s_environment_variable_is_part_of_what_is_cached(memory_keyring: MemoryKeyring) -> None:
    cache = KeyCache(CountingKeyStore())
    assert cache.key_for(OPENAI) is None
    assert cache.key_for(replace(OPENAI, key_env="OTHER_KEY")) == "sk-from-env"


async def test_reading_ahead_happens_in_a_worker_thread(memory_keyring: MemoryKeyring) -> None:
    store = CountingKeyStore()
    store.set("openai", SECRET)
    cache = KeyCache(store)
    await cache.read_ahead(OPENAI)
    assert len(store.threads) == 1
    assert store.threads[0] is not threading.main_thread()
    assert cache.key_for(OPENAI) == SECRET  # found read: no second read on this thread
    assert len(store.threads) == 1


def test_a_key_that_cannot_be_read_is_not_kept() -> None:
    store = CountingKeyStore()
    cache = KeyCache(store)
    locked = LockedKeyring()
    for _ in use_keyring(locked):  # type: ignore[misc]
        with pytest.raises(SecretStoreError):
            cache.key_for(OPENAI)
        locked.get_password = lambda service, username: SECRET  # type: ignore[method-assign]  # unlocked
        assert cache.key_for(OPENAI) == SECRET  # read again, not a remembered failure
    assert len(store.threads) == 2
