"""API keys: only in the OS keyring, or from an environment variable for one run (SPEC §7, §9).

:class:`KeyStore` wraps the ``keyring`` package (service ``"tiny-agent-desktop"``, username = the profile id). It
never writes a key anywhere else, and it refuses keyring backends that are not an OS keyring: the ``fail`` backend a
headless Linux machine gets (every call raises ``NoKeyringError``), the ``null`` backend (silently drops secrets) and
``keyrings.alt`` (stores them in a plaintext file). Where none is usable, :meth:`KeyStore.status` says so in words,
and :meth:`KeyStore.key_for` still finds a key in the profile's environment variable — read from this process's
environment each time, for this run only::

    store = KeyStore()
    if not store.status().available:
        show(store.status().reason, store.environment_hint(profile))
    api_key = store.key_for(profile)        # keyring, else $KEY_ENV, else None

Every ``keyring.errors.KeyringError`` becomes a :class:`~tiny_agent_core.errors.SecretStoreError`
(:class:`~tiny_agent_core.errors.KeyringUnavailableError` when there is no usable keyring at all). Messages never
contain the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import keyring
import keyring.backend
import keyring.errors
from keyring.backends import chainer, fail, null

from tiny_agent_core.errors import KeyringUnavailableError, SecretStoreError
from tiny_agent_core.providers.profiles import check_api_key
from tiny_agent_core.settings import ProfileConfig

__all__ = ["SERVICE", "KeySource", "KeyStore", "KeyringStatus", "ResolvedKey"]

SERVICE = "tiny-agent-desktop"
"""The keyring service name every key is stored under; the username is the profile id."""

_NO_KEYRING = (
    "No system keyring is available (such as GNOME Keyring or KWallet through the Secret Service, the macOS Keychain "
    "or the Windows Credential Locker), so API keys cannot be saved."
)


@dataclass(frozen=True, slots=True)
class KeyringStatus:
    """Whether keys can be saved, and if not, why (a sentence for the user)."""

    available: bool
    backend: str
    """The keyring backend's name (e.g. ``"SecretService Keyring"``)."""
    reason: str | None = None
    """Why keys cannot be saved; ``None`` when :attr:`available`."""


class KeySource(StrEnum):
    """Where a key came from."""

    KEYRING = "keyring"
    ENVIRONMENT = "environment"


@dataclass(frozen=True, slots=True)
class ResolvedKey:
    """A key found for a profile, and where it was found."""

    key: str
    source: KeySource
    env_var: str | None = None
    """The environment variable it came from (for :attr:`KeySource.ENVIRONMENT`)."""

    def __repr__(self) -> str:
        return f"ResolvedKey(key='***', source={self.source.value!r}, env_var={self.env_var!r})"


class KeyStore:
    """API keys in the OS keyring, by profile id; an environment variable may supply one for a run.

    The keyring backend is looked up on every call (so ``keyring.set_keyring`` in tests takes effect), and
    ``environ`` defaults to this process's environment.
    """

    def __init__(self, service: str = SERVICE, *, environ: Mapping[str, str] | None = None) -> None:
        self.service = service
        self._environ = environ

    # -- status --------------------------------------------------------------------------------------------

    def status(self) -> KeyringStatus:
        """Whether an OS keyring is usable here."""
        backend = keyring.get_keyring()
        name = _backend_name(backend)
        reason = _unusable(backend)
        return KeyringStatus(reason is None, name, reason)

    @property
    def available(self) -> bool:
        """True when keys can be saved in an OS keyring."""
        return self.status().available

    def environment_hint(self, profile: ProfileConfig) -> str:
        """How to supply a key without a keyring, for this profile."""
        if profile.key_env:
            return (
                f"Set the environment variable {profile.key_env} before starting tiny-agent desktop: the key is then "
                "used for that run only and never written anywhere."
            )
        return (
            "Give this provider an environment variable name and set that variable before starting tiny-agent "
            "desktop: the key is then used for that run only and never written anywhere."
        )

    # -- keyring -------------------------------------------------------------------------------------------

    def get(self, profile_id: str) -> str | None:
        """The stored key, or ``None`` when there is none. Raises :class:`SecretStoreError` subclasses."""
        self._require_keyring()
        try:
            return keyring.get_password(self.service, profile_id)
        except keyring.errors.KeyringError as error:
            raise _translate(error, "read the API key from") from error

    def set(self, profile_id: str, key: str) -> None:
        """Store a key (surrounding whitespace removed). Raises :class:`SecretStoreError` subclasses."""
        if not key.strip():
            raise ValueError("An empty API key cannot be stored; delete the key instead.")
        key = check_api_key(key)
        self._require_keyring()
        try:
            keyring.set_password(self.service, profile_id, key)
        except keyring.errors.KeyringError as error:
            raise _translate(error, "save the API key in") from error

    def delete(self, profile_id: str) -> None:
        """Forget the stored key; nothing happens when there is none."""
        self._require_keyring()
        try:
            keyring.delete_password(self.service, profile_id)
        except keyring.errors.PasswordDeleteError:
            return
        except keyring.errors.KeyringError as error:
            raise _translate(error, "delete the API key from") from error

    def discard(self, profile_id: str) -> None:
        """:meth:`delete` where there is a keyring; without one there is nothing stored to forget."""
        if self.available:
            self.delete(profile_id)

    def has_key(self, profile_id: str) -> bool:
        """True when the keyring holds a key for this profile (``False`` when there is no keyring)."""
        if not self.available:
            return False
        return self.get(profile_id) is not None

    # -- resolution ----------------------------------------------------------------------------------------

    def resolve(self, profile: ProfileConfig) -> ResolvedKey | None:
        """The key for a profile: the keyring's, else the profile's environment variable's, else ``None``.

        A keyring failure (e.g. locked) is raised only when the environment variable cannot stand in for it.
        """
        failure: SecretStoreError | None = None
        if self.available:
            try:
                stored = self.get(profile.id)
            except SecretStoreError as error:
                failure = error
            else:
                if stored:
                    return ResolvedKey(stored, KeySource.KEYRING)
        environ = os.environ if self._environ is None else self._environ
        value = environ.get(profile.key_env, "").strip() if profile.key_env else ""
        if value:
            return ResolvedKey(value, KeySource.ENVIRONMENT, profile.key_env)
        if failure is not None:
            raise failure
        return None

    def key_for(self, profile: ProfileConfig) -> str | None:
        """Just the key of :meth:`resolve`."""
        resolved = self.resolve(profile)
        return resolved.key if resolved is not None else None

    def _require_keyring(self) -> None:
        status = self.status()
        if not status.available:
            raise KeyringUnavailableError(status.reason or _NO_KEYRING)


def _backend_name(backend: keyring.backend.KeyringBackend) -> str:
    name = getattr(backend, "name", None)
    return name if isinstance(name, str) and name else type(backend).__name__


def _unusable(backend: keyring.backend.KeyringBackend) -> str | None:
    """Why a backend is not an OS keyring we may use, or ``None`` when it is."""
    if isinstance(backend, chainer.ChainerBackend):
        # Writes go to the first member that takes them: every member must be an OS keyring.
        members = list(backend.backends)
        reasons = [reason for reason in map(_unusable, members) if reason is not None]
        return reasons[0] if reasons else None if members else _NO_KEYRING
    if isinstance(backend, fail.Keyring | null.Keyring):
        return _NO_KEYRING
    if type(backend).__module__.startswith("keyrings.alt"):
        return (
            f"The configured keyring backend ({_backend_name(backend)}, from keyrings.alt) is not an OS keyring and "
            "may keep secrets in a plain file, so tiny-agent desktop does not save API keys in it."
        )
    return None


def _translate(error: keyring.errors.KeyringError, action: str) -> SecretStoreError:
    if isinstance(error, keyring.errors.NoKeyringError):
        return KeyringUnavailableError(_NO_KEYRING)
    detail = str(error).strip() or type(error).__name__
    return SecretStoreError(f"Could not {action} the system keyring: {detail}.")
