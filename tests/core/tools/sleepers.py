"""Helpers for the process-tool tests: sandbox availability, and finding a uniquely named sleeper on the host.

A sleeper is ``sleep <unique seconds>``; it is found by its exact command line in the host's ``/proc``, so the
tests work the same inside the sandbox's PID namespace (where ``$$`` and ``$!`` are not host pids).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tiny_agent_core.tools.sandbox import sandbox_status

needs_sandbox = pytest.mark.skipif(
    not sandbox_status().available, reason=f"no bubblewrap sandbox: {sandbox_status().reason}"
)
"""Skips a test where bwrap cannot run here, saying why."""

MODES = [pytest.param(False, id="unsandboxed"), pytest.param(True, id="sandboxed", marks=needs_sandbox)]
"""``sandbox`` values for ``parametrize``: unsandboxed, and sandboxed where bwrap runs."""


def unique_seconds() -> str:
    """A sleep length no other process uses (over a day, so it never ends by itself)."""
    return str(100_000 + uuid.uuid4().int % 1_000_000)


def sleepers(seconds: str) -> list[int]:
    """Host pids of live ``sleep <seconds>`` processes (zombies have an empty command line)."""
    wanted = b"sleep\0" + seconds.encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def eventually(condition: Callable[[], bool], what: str, *, within: float = 10.0) -> None:
    """Poll ``condition`` until it holds, failing with ``what`` after ``within`` seconds."""
    end = time.monotonic() + within
    while not condition():
        assert time.monotonic() < end, what
        await asyncio.sleep(0.02)


async def assert_sleepers_gone(seconds: str) -> None:
    """Every ``sleep <seconds>`` dies (bounded wait)."""
    await eventually(lambda: not sleepers(seconds), f"sleep {seconds} survived")


def detached_sleepers(seconds: str) -> str:
    """Shell text starting two sleepers that leave the command's process group, then waiting until both run.

    One calls ``setsid``; the other is a double-forked daemon (its parent subshell exits at once). The command
    goes on only once both are ``sleep`` (seen in its own ``/proc``), so the test never passes for want of them.
    """
    return (
        "running() { n=0; for f in /proc/[0-9]*/cmdline; do "
        f'[ "$(tr -d \'\\000\' 2>/dev/null < "$f")" = sleep{seconds} ] && n=$((n+1)); done; [ $n -ge 2 ]; }}; '
        f"setsid sleep {seconds} & ( setsid sleep {seconds} & ) ; until running; do :; done; "
    )
