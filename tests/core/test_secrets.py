"""KeyStore: keys only in an OS keyring, never in a file; an environment variable stands in for one run.

The tests swap the process-wide keyring backend with ``keyring.set_keyring`` and restore it afterwards.
:class:`MemoryKeyring` (also used by the GUI tests) has a ``priority`` that raises, so merely importing it never
makes it a candidate for keyring's own backend discovery (../shared/PLATFORM.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import keyring.errors
import pytest
from keyring.backends import fail, null
from keyring.compat import properties

from tiny_agent_core.errors import KeyringUnavailableError, ProviderConfigurationError, SecretStoreError
from tiny_agent_core.paths import CONFIG_DIR_ENV, DATA_DIR_ENV, config_dir, data_dir
from tiny_agent_core.secrets import SERVICE, KeySource, KeyStore
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_core.tools.approval import ToolSettings


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A keyring backend in a dict, for tests only."""

    @properties.classproperty
    def priority(cls) -> float:
        raise RuntimeError("a test backend is never chosen by keyring's discovery")

    def __init__(self) -> None:
        super().__init__()
        self.secrets: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.secrets.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.secrets[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.secrets.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError("no such password")


class LockedKeyring(MemoryKeyring):
    """A keyring that is there but refuses every operation (like a locked Secret Service)."""

    def get_password(self, service: str, username: str) -> str | None:
        raise keyring.errors.KeyringLocked("Prompt dismissed")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.KeyringLocked("Prompt dismissed")

    def delete_password(self, service: str, username: str) -> None:
        raise keyring.errors.KeyringLocked("Prompt dismissed")


def use_keyring(backend: keyring.backend.KeyringBackend) -> Iterator[keyring.backend.KeyringBackend]:
    """Install ``backend`` for the duration of a fixture."""
    previous = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    yield from use_keyring(backend)  # type: ignore[misc]


@pytest.fixture
def no_keyring() -> Iterator[keyring.backend.KeyringBackend]:
    yield from use_keyring(fail.Keyring())


OPENAI = ProfileConfig.from_preset("openai", "openai")
SECRET = "sk-test-0123456789-abc_DEF.~+/="  # every character HTTP headers allow in a key


def test_the_test_backend_is_never_a_discovery_candidate() -> None:
    assert MemoryKeyring not in set(keyring.backend.KeyringBackend.get_viable_backends())


def test_set_get_delete_round_trip(memory_keyring: MemoryKeyring) -> None:
    store = KeyStore()
    assert store.status().available
    assert store.get("openai") is None
    store.set("openai", f"  {SECRET}\n")
    assert memory_keyring.secrets == {(SERVICE, "openai"): SECRET}
    assert store.get("openai") == SECRET
    assert store.has_key("openai")
    store.delete("openai")
    store.delete("openai")  # deleting nothing is fine
    assert store.get("openai") is None


def test_an_empty_key_is_refused(memory_keyring: MemoryKeyring) -> None:
    with pytest.raises(ValueError, match="empty"):
        KeyStore().set("openai", "   ")
    assert memory_keyring.secrets == {}


def test_key_for_prefers_the_keyring_then_the_environment(memory_keyring: MemoryKeyring) -> None:
    store = KeyStore(environ={"OPENAI_API_KEY": "sk-from-env"})
    resolved = store.resolve(OPENAI)
    assert resolved is not None
    assert (resolved.key, resolved.source, resolved.env_var) == ("sk-from-env", KeySource.ENVIRONMENT, "OPENAI_API_KEY")
    store.set("openai", SECRET)
    assert store.key_for(OPENAI) == SECRET
    assert SECRET not in repr(store.resolve(OPENAI))
    assert KeyStore(environ={}).key_for(ProfileConfig.from_preset("ollama", "ollama")) is None


@pytest.mark.usefixtures("no_keyring")
def test_without_a_keyring_it_says_so_and_takes_the_environment_variable() -> None:
    store = KeyStore(environ={"OPENAI_API_KEY": " sk-env "})
    status = store.status()
    assert not status.available
    assert status.reason is not None
    assert "No system keyring" in status.reason
    assert "keyrings.alt" not in status.reason  # never recommend the plaintext backend
    assert "OPENAI_API_KEY" in store.environment_hint(OPENAI)
    assert "environment variable name" in store.environment_hint(ProfileConfig.custom("c", "http://h/v1"))
    assert store.key_for(OPENAI) == "sk-env"
    assert KeyStore(environ={}).key_for(OPENAI) is None
    assert not store.has_key("openai")
    with pytest.raises(KeyringUnavailableError):
        store.set("openai", SECRET)
    with pytest.raises(KeyringUnavailableError):
        store.get("openai")


def test_the_environment_is_read_at_call_time_and_never_written(
    monkeypatch: pytest.MonkeyPatch, no_keyring: keyring.backend.KeyringBackend
) -> None:
    store = KeyStore()
    assert store.key_for(OPENAI) is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-later")
    assert store.key_for(OPENAI) == "sk-later"
    assert os.environ["OPENAI_API_KEY"] == "sk-later"


class PlaintextKeyring(MemoryKeyring):
    """Stands in for ``keyrings.alt.file.PlaintextKeyring`` (which is not installed, on purpose)."""

    __module__ = "keyrings.alt.file"


@pytest.mark.parametrize("backend", [null.Keyring(), PlaintextKeyring()], ids=["null", "keyrings.alt"])
def test_backends_that_are_not_an_os_keyring_are_refused(backend: keyring.backend.KeyringBackend) -> None:
    for _ in use_keyring(backend):
        status = KeyStore().status()
        assert not status.available
        with pytest.raises(KeyringUnavailableError):
            KeyStore().set("openai", SECRET)


def test_keyring_failures_are_typed_and_the_environment_still_stands_in() -> None:
    for _ in use_keyring(LockedKeyring()):
        store = KeyStore(environ={})
        with pytest.raises(SecretStoreError, match="Prompt dismissed") as caught:
            store.set("openai", SECRET)
        assert not isinstance(caught.value, KeyringUnavailableError)
        assert SECRET not in str(caught.value)
        with pytest.raises(SecretStoreError):
            store.key_for(OPENAI)
        assert KeyStore(environ={"OPENAI_API_KEY": "sk-env"}).key_for(OPENAI) == "sk-env"


def test_a_key_never_reaches_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_keyring: MemoryKeyring
) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(tmp_path / "config"))
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    settings = AppSettings.load()
    settings.add_profile(OPENAI)
    settings.add_workspace(tmp_path / "project")
    store = KeyStore()
    store.set(OPENAI.id, SECRET)
    settings.save()
    tools = ToolSettings.load(config_dir())
    tools.allow_always("bash")
    data_dir().mkdir(parents=True)
    files = [path for root in (config_dir(), data_dir()) for path in root.rglob("*") if path.is_file()]
    assert files  # the settings were written
    for path in files:
        content = path.read_bytes()
        assert SECRET.encode() not in content
        assert SECRET.encode("utf-16-le") not in content
    assert store.get(OPENAI.id) == SECRET


@pytest.mark.parametrize("bad", ["sk-ünïcødé", "sk-with space", "sk-line\nbreak", "sk-“quoted”"])
def test_keys_an_http_header_cannot_carry_are_refused_before_saving(bad: str) -> None:
    store = KeyStore()
    with pytest.raises(ProviderConfigurationError, match="Paste the key again") as caught:
        store.set("p", bad)
    assert bad not in str(caught.value)
