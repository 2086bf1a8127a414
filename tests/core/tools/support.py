"""Helpers for the tool tests: process-group inspection and the reference contracts."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.shared_data import SHARED

CONTRACTS = SHARED / "reference" / "schemas" / "tools"


def load_contract(name: str) -> dict[str, Any] | None:
    """A contract file of ../shared, or ``None`` when ../shared is absent (the tests then skip)."""
    path = CONTRACTS / name
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


_PR_SET_CHILD_SUBREAPER = 36


@contextlib.contextmanager
def subreaper() -> Iterator[bool]:
    """Make this process the reaper of orphaned descendants for a while (Linux), so a test can reap a killed
    group's orphans itself instead of waiting for PID 1 (which here takes a second or two). Yields whether it
    worked."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        enabled = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        enabled = False
    try:
        yield enabled
    finally:
        if enabled:
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _members(pgid: int) -> list[tuple[int, str, int]]:
    """(pid, state, ppid) of every process in the group."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid:
            members.append((int(entry.name), fields[0], int(fields[1])))
    return members


def live_members(pgid: int) -> list[int]:
    """Pids of the group's members that are not zombies (dead but unreaped)."""
    return [pid for pid, state, _ in _members(pgid) if state not in ("Z", "X")]


def _reap_our_zombies(pgid: int) -> None:
    for pid, state, ppid in _members(pgid):
        if state in ("Z", "X") and ppid == os.getpid():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


def group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


async def assert_group_gone(pgid: int, *, deadline: float = 10.0) -> None:
    """Every member of the group dies (SIGKILL, polled for: a loaded machine delivers it late); the group is gone
    once init has reaped the orphans.

    Orphaned zombies are reaped by PID 1, which on some machines takes a second or two, so the group's
    disappearance (``os.killpg(pgid, 0)`` raising ``ProcessLookupError``) is polled for; under
    :func:`subreaper` the orphans are this process's children and are reaped here at once.
    """
    end = time.monotonic() + deadline
    while live_members(pgid):  # SIGKILL is delivered when the scheduler next runs each member
        assert time.monotonic() < end, f"process group {pgid} still has live members: {live_members(pgid)}"
        await asyncio.sleep(0.01)
    while group_exists(pgid):
        _reap_our_zombies(pgid)  # orphans are ours while a test holds subreaper()
        if not group_exists(pgid):
            break
        assert time.monotonic() < end, f"process group {pgid} still exists"
        await asyncio.sleep(0.05)
    assert not group_exists(pgid)
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def text_of(path: Path) -> str:
    """A small file's text (a plain blocking read, for async tests)."""
    return path.read_text(encoding="utf-8")


def real(path: Path) -> Path:
    return path.resolve()


def _text_if_present(path: Path) -> str:
    return path.read_text() if path.exists() else ""


async def wait_for_file(path: Path, *, within: float = 5.0) -> str:
    end = time.monotonic() + within
    while True:
        if (text := _text_if_present(path)).strip():
            return text
        assert time.monotonic() < end, f"{path} never appeared"
        await asyncio.sleep(0.01)
