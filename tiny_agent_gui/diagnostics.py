"""What the About dialog shows and "Copy diagnostics" copies: versions, platform, folders, keyring and sandbox
status, and the settings without secrets (no Qt import here).

:func:`settings_summary` is cheap and pure (run it on the GUI thread, where the settings live);
:func:`collect` asks the keyring and probes the sandbox, which can block, so the window runs it in a worker
thread. Nothing here reads a key: the settings file holds none, and base URLs lose any user info and query.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tiny_agent_core.paths import config_dir, data_dir, default_workspace
from tiny_agent_core.session.store import sessions_directory
from tiny_agent_core.settings import SETTINGS_FILE, AppSettings
from tiny_agent_gui.logs import log_file

__all__ = ["ROW_LABELS", "Diagnostics", "Status", "app_version", "collect", "safe_url", "settings_summary"]

ROW_LABELS = (
    "Version",
    "Price table",
    "Python",
    "Qt",
    "Platform",
    "Settings",
    "Data",
    "Sessions (default workspace)",
    "Log file",
    "Keyring",
    "Bash sandbox",
)
"""The labels of :meth:`Diagnostics.rows`, in order."""

DISTRIBUTION = "tiny-agent-desktop"
"""The distribution name whose version is the app's version."""


def app_version() -> str:
    """The installed version of tiny-agent desktop (``"unknown"`` when its metadata is missing)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def safe_url(url: str | None) -> str | None:
    """``url`` without user info, query or fragment (where a key could hide)."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def settings_summary(settings: AppSettings) -> dict[str, Any]:
    """The settings as plain data without secrets: profiles (provider, name, base URL, model, the *name* of the
    key variable), the active profile, workspace folders, which price overrides exist, and any load error."""
    return {
        "file": str(settings.path) if settings.path is not None else None,
        "activeProfile": settings.active_profile,
        "profiles": [
            {
                "id": profile.id,
                "provider": profile.provider,
                "name": profile.name,
                "baseUrl": safe_url(profile.base_url),
                "model": profile.model,
                "keyEnv": profile.key_env,
            }
            for profile in settings.profiles
        ],
        "workspaces": list(settings.workspaces),
        "priceOverrides": sorted(f"{provider}/{model}" for provider, model in settings.price_overrides),
        "loadError": str(settings.load_error) if settings.load_error is not None else None,
    }


@dataclass(frozen=True, slots=True)
class Status:
    """Whether a facility is available, and why not."""

    available: bool
    detail: str
    """The backend's name when available, else the reason."""

    def text(self) -> str:
        """``"available (detail)"`` or ``"not available: detail"``."""
        return f"available ({self.detail})" if self.available else f"not available: {self.detail}"


@dataclass(frozen=True, slots=True)
class Diagnostics:
    """Everything the About dialog shows and "Copy diagnostics" copies."""

    version: str
    price_table: str
    python: str
    toolkit: str
    platform: str
    frozen: bool
    config_dir: Path
    data_dir: Path
    sessions_dir: Path
    log_file: Path
    keyring: Status
    sandbox: Status
    settings: Mapping[str, Any] = field(default_factory=dict)

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs, in the order the About dialog shows them."""
        values = (
            self.version + (" (bundle)" if self.frozen else ""),
            self.price_table,
            self.python,
            self.toolkit,
            self.platform,
            str(self.config_dir / SETTINGS_FILE),
            str(self.data_dir),
            str(self.sessions_dir),
            str(self.log_file),
            self.keyring.text(),
            self.sandbox.text(),
        )
        return list(zip(ROW_LABELS, values, strict=True))

    def as_text(self) -> str:
        """A plain-text report to paste into a bug report (no keys, no prompts)."""
        lines = ["tiny-agent desktop diagnostics"]
        lines += [f"{label}: {value}" for label, value in self.rows()]
        lines.append("Settings (no secrets):")
        lines += _indented(self.settings)
        return "\n".join(lines) + "\n"


def _indented(value: Mapping[str, Any], depth: int = 1) -> list[str]:
    pad = "  " * depth
    lines: list[str] = []
    for key, item in value.items():
        if isinstance(item, Mapping):
            lines.append(f"{pad}{key}:")
            lines += _indented(item, depth + 1)
        elif isinstance(item, list) and item and all(isinstance(entry, Mapping) for entry in item):
            lines.append(f"{pad}{key}:")
            for entry in item:
                lines.append(f"{pad}  -")
                lines += _indented(entry, depth + 2)
        else:
            lines.append(f"{pad}{key}: {item}")
    return lines


def _keyring_status() -> Status:
    from tiny_agent_core.secrets import KeyStore

    try:
        status = KeyStore().status()
    except Exception as error:  # a broken backend must not break the About dialog
        return Status(False, f"the keyring could not be queried: {error}")
    return Status(status.available, status.backend if status.available else (status.reason or status.backend))


def _sandbox_status() -> Status:
    from tiny_agent_core.tools.sandbox import sandbox_status

    try:
        status = sandbox_status()
    except Exception as error:
        return Status(False, f"the sandbox could not be probed: {error}")
    return Status(status.available, "bubblewrap" if status.available else (status.reason or "unknown"))


def collect(settings: Mapping[str, Any], toolkit: str) -> Diagnostics:
    """Gather the diagnostics (blocking: asks the keyring, probes the sandbox; run it off the GUI thread).

    ``settings`` is :func:`settings_summary`'s result; ``toolkit`` the Qt and PySide6 versions (the caller knows
    them without this module importing Qt).
    """
    from tiny_agent_core.pricing import PRICE_TABLE_VERSION

    return Diagnostics(
        version=app_version(),
        price_table=PRICE_TABLE_VERSION,
        python=f"{platform.python_version()} ({platform.python_implementation()})",
        toolkit=toolkit,
        platform=platform.platform(),
        frozen=bool(getattr(sys, "frozen", False)),
        config_dir=config_dir(),
        data_dir=data_dir(),
        sessions_dir=sessions_directory(default_workspace()),
        log_file=log_file(),
        keyring=_keyring_status(),
        sandbox=_sandbox_status(),
        settings=dict(settings),
    )
