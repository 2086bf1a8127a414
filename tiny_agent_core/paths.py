"""Where the app keeps its own things: the data, config and log folders, and the files the app places in them.

Every folder comes from platformdirs under the application name ``tiny-agent-desktop`` (so on Linux the XDG
variables move them: ``XDG_DATA_HOME``, ``XDG_CONFIG_HOME``, ``XDG_STATE_HOME``), and each has an environment
variable that, when set and non-empty, replaces it entirely (tests and portable installs use them):

==============  ==========================  ==========================================================
folder          override                    holds
==============  ==========================  ==========================================================
data            ``TINY_AGENT_DATA_DIR``     the index and ledger database, the default workspace, the
                                            saved comparisons and their workspace copies
config          ``TINY_AGENT_CONFIG_DIR``   settings, standing tool permissions, the MCP app catalog
logs            ``TINY_AGENT_LOG_DIR``      the GUI's rotating log file
==============  ==========================  ==========================================================

Nothing here creates a folder. What lives inside a *workspace* (``<workspace>/.tiny-agent/sessions/``) is the
session store's rule: :func:`tiny_agent_core.session.store.sessions_directory` and
:func:`~tiny_agent_core.session.store.session_workspace`.

platformdirs is imported only when no override is set: a command that is told its folders starts faster.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "APP_NAME",
    "COMPARISONS_FOLDER_NAME",
    "CONFIG_DIR_ENV",
    "DATABASE_NAME",
    "DATA_DIR_ENV",
    "DEFAULT_WORKSPACE_NAME",
    "LOG_DIR_ENV",
    "comparisons_folder",
    "config_dir",
    "data_dir",
    "database_path",
    "default_workspace",
    "log_dir",
]

APP_NAME = "tiny-agent-desktop"
"""The platformdirs application name."""

DATA_DIR_ENV = "TINY_AGENT_DATA_DIR"
"""Environment variable that overrides the user data folder."""

CONFIG_DIR_ENV = "TINY_AGENT_CONFIG_DIR"
"""Environment variable that overrides the user config folder."""

LOG_DIR_ENV = "TINY_AGENT_LOG_DIR"
"""Environment variable that overrides the log folder."""

DATABASE_NAME = "index.sqlite3"
"""File name of the index and ledger database inside the data folder."""

DEFAULT_WORKSPACE_NAME = "workspace"
"""Folder (inside the data folder) used as the workspace when the user has not opened one."""

COMPARISONS_FOLDER_NAME = "compare"
"""Folder (inside the data folder) holding the saved comparisons and their workspace copies."""


def _override(variable: str) -> Path | None:
    value = os.environ.get(variable, "").strip()
    return Path(value).expanduser() if value else None


def data_dir() -> Path:
    """The user data folder: ``$TINY_AGENT_DATA_DIR`` if set, else platformdirs' user data path."""
    override = _override(DATA_DIR_ENV)
    if override is not None:
        return override
    import platformdirs

    return platformdirs.user_data_path(APP_NAME, appauthor=False)


def config_dir() -> Path:
    """The user config folder: ``$TINY_AGENT_CONFIG_DIR`` if set, else platformdirs' user config path."""
    override = _override(CONFIG_DIR_ENV)
    if override is not None:
        return override
    import platformdirs

    return platformdirs.user_config_path(APP_NAME, appauthor=False)


def log_dir() -> Path:
    """The log folder: ``$TINY_AGENT_LOG_DIR`` if set, else platformdirs' user log path."""
    override = _override(LOG_DIR_ENV)
    if override is not None:
        return override
    import platformdirs

    return platformdirs.user_log_path(APP_NAME, appauthor=False)


def database_path() -> Path:
    """The SQLite index and ledger file."""
    return data_dir() / DATABASE_NAME


def default_workspace() -> Path:
    """The default workspace folder, under the user data folder."""
    return data_dir() / DEFAULT_WORKSPACE_NAME


def comparisons_folder() -> Path:
    """``<data folder>/compare``: where compare runs put their copies and records."""
    return data_dir() / COMPARISONS_FOLDER_NAME
