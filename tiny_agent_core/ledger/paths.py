"""Where the index database and the default workspace live (SPEC §5).

The user data folder comes from platformdirs (``tiny-agent-desktop``), so ``XDG_DATA_HOME`` moves it on Linux.
``TINY_AGENT_DATA_DIR``, when set and non-empty, overrides it entirely: tests and portable installs use it.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "tiny-agent-desktop"
"""The platformdirs application name."""

DATA_DIR_ENV = "TINY_AGENT_DATA_DIR"
"""Environment variable that overrides the user data folder."""

DATABASE_NAME = "index.sqlite3"
"""File name of the index and ledger database inside the data folder."""

DEFAULT_WORKSPACE_NAME = "workspace"
"""Folder (inside the data folder) used as the workspace when the user has not opened one."""


def data_dir() -> Path:
    """The user data folder: ``$TINY_AGENT_DATA_DIR`` if set, else platformdirs' user data path."""
    override = os.environ.get(DATA_DIR_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    return platformdirs.user_data_path(APP_NAME, appauthor=False)


def database_path() -> Path:
    """The SQLite index and ledger file."""
    return data_dir() / DATABASE_NAME


def default_workspace() -> Path:
    """The default workspace folder, under the user data folder."""
    return data_dir() / DEFAULT_WORKSPACE_NAME


def sessions_dir(workspace: Path) -> Path:
    """A workspace's session folder, ``<workspace>/.tiny-agent/sessions`` (reference notes §5.1)."""
    return workspace / ".tiny-agent" / "sessions"
