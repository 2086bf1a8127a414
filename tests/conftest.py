"""Root test configuration: Qt runs offscreen, and every test gets its own app folders and keyring.

Isolation (autouse, :func:`app_folders`): each test runs with ``TINY_AGENT_DATA_DIR``, ``TINY_AGENT_CONFIG_DIR`` and
``TINY_AGENT_LOG_DIR`` pointing into a fresh temporary folder, and the XDG base folders (data, config, cache, state)
moved there too, so no test reads or writes the user's index, settings, logs or caches — nor another test's, which
is what lets the suite run in parallel (``pytest -n``). The folders are not created: code that needs one makes it,
as it would on a first start. A test that wants a folder of its own still sets the variable (``monkeypatch.setenv``
wins for that test). A test that needs the paths asks for the ``app_folders`` fixture.

The keyring (autouse, :func:`_no_os_keyring`) is keyring's ``fail`` backend, what a headless machine has: no test
can read or write the OS keyring by accident (CI runs the suite with a real Secret Service). Tests that want a
working keyring install an in-memory one (``tests/core/test_secrets.py``: ``memory_keyring``); the one test of the
real Secret Service is marked ``os_keyring`` and keeps the backend keyring discovers.

Logging (autouse, :func:`_own_logging`): the root logger's handlers and level are put back after each test. The
CLI's ``main`` (run in-process by many tests) and the window's ``setup_logging`` install root handlers, as a real
process does once; left behind, they would write one test's records into a later test's captured stderr.

Garbage collection (:func:`pytest_collection_finish`): once the test modules are imported, everything alive is
moved out of the collector's reach (``gc.freeze``). What collection loaded — the app, Qt, the MCP SDK, hypothesis,
pytest — lives until the process ends anyway, and a full collection that walks it costs ~150 ms; the GUI tests
collect after every test (tests/gui/conftest.py) and the app's GUI-thread collector runs on a timer, so without the
freeze a worker spends most of a GUI test's CPU walking objects that can never be garbage. Objects a test creates
are collected as before.

TLS (:data:`LOOPBACK_TLS`): the provider and agent fixtures' httpx clients share one SSL context instead of each
building its own from the CA bundle (~20 ms a client, for some 250 tests that only talk to 127.0.0.1).
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Imported now, not lazily by hypothesis's pytest plugin at session end: on CPython 3.11 the AST constructor's
# recursion bookkeeping is shared between threads (fixed in later CPython), and a late import that pytest
# rewrites (ast.parse) while a test's helper thread winds down can fail with "AST constructor recursion depth
# mismatch".
import httpx
import hypothesis  # noqa: F401
import keyring
import pytest
from keyring.backends import fail

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

LOOPBACK_TLS = httpx.create_ssl_context(trust_env=False)
"""The SSL context ``httpx.AsyncClient(trust_env=False)`` would build for itself, built once (see the docstring)."""


def pytest_collection_finish(session: pytest.Session) -> None:
    """Free what importing the test modules left behind, then freeze the rest (see the module docstring)."""
    gc.collect()
    gc.freeze()


@dataclass(frozen=True, slots=True)
class AppFolders:
    """The folders one test's app uses (none exists until the code under test creates it)."""

    data: Path
    """``TINY_AGENT_DATA_DIR``: the index database and the default workspace."""
    config: Path
    """``TINY_AGENT_CONFIG_DIR``: settings, tool settings, price overrides."""
    logs: Path
    """``TINY_AGENT_LOG_DIR``: the GUI's log file."""
    xdg: Path
    """The XDG base folders (``data``, ``config``, ``cache``, ``state`` under it)."""


@pytest.fixture(autouse=True)
def app_folders(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> AppFolders:
    """Point every app folder of this test into a fresh temporary folder (see the module docstring)."""
    root = tmp_path_factory.mktemp("app")
    folders = AppFolders(data=root / "data", config=root / "config", logs=root / "logs", xdg=root / "xdg")
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(folders.data))
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(folders.config))
    monkeypatch.setenv("TINY_AGENT_LOG_DIR", str(folders.logs))
    for kind in ("data", "config", "cache", "state"):
        monkeypatch.setenv(f"XDG_{kind.upper()}_HOME", str(folders.xdg / kind))
    return folders


@pytest.fixture(autouse=True)
def _own_logging() -> Iterator[None]:
    """The root logger as the test found it, afterwards (see the module docstring)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [handler for handler in root.handlers if handler not in handlers]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)


@pytest.fixture(autouse=True)
def _no_os_keyring(request: pytest.FixtureRequest) -> Iterator[None]:
    """keyring's ``fail`` backend for the test, unless it is marked ``os_keyring`` (see the module docstring)."""
    if request.node.get_closest_marker("os_keyring") is not None:
        yield
        return
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(previous)
