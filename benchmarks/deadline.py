"""A wall-clock deadline for a benchmark process: past it, the benchmark says so and exits instead of hanging.

Every benchmark calls :func:`exit_after` first thing. When the deadline passes (a stuck event loop, a paint that
never comes, a server that never answers), a watchdog thread writes one line naming the benchmark and the
deadline to stderr, then every thread's stack (to show where it hung), and ends the process with exit status 3.
It works while the main thread is blocked in C code (a Qt event loop, a socket read), where a signal handler
would not run. A benchmark that spawns itself as a child process installs the deadline in the child too, and
waits for it with a timeout a little longer than the child's deadline.

``TINY_AGENT_BENCH_DEADLINE_S`` overrides every benchmark's own deadline (seconds), e.g. for a slow machine.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading

__all__ = ["DEADLINE_ENV", "EXIT_STATUS", "exit_after"]

DEADLINE_ENV = "TINY_AGENT_BENCH_DEADLINE_S"
"""Environment variable: a deadline in seconds that replaces each benchmark's default."""

EXIT_STATUS = 3
"""The exit status of a benchmark that ran out of time."""


def exit_after(seconds: float, name: str) -> float:
    """Exit the process with a message if it is still running ``seconds`` from now; returns the deadline used."""
    override = os.environ.get(DEADLINE_ENV)
    limit = float(override) if override else seconds

    def expire() -> None:
        sys.stderr.write(
            f"{name}: no result after {limit:g} s, giving up (the deadline; set {DEADLINE_ENV} to change it). "
            "Where each thread was:\n"
        )
        sys.stderr.flush()
        faulthandler.dump_traceback(all_threads=True)
        os._exit(EXIT_STATUS)

    watchdog = threading.Timer(limit, expire)
    watchdog.daemon = True
    watchdog.name = "benchmark-deadline"
    watchdog.start()
    return limit
