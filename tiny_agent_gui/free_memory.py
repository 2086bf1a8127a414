"""Giving memory back to the system once a long session has been let go.

CPython keeps objects larger than 512 bytes (message texts, tool results) in the C library's heap. When the window
switches sessions, the previous session's state and timeline, and the load's temporary objects, are freed; but
glibc keeps most of that memory for later allocations instead of returning it, so the window's RSS only grows. On
glibc, ``malloc_trim(0)`` returns it: with a 5,000-message session open, after nine others were opened and closed,
RSS went from 254–260 MB to 233–239 MB (``benchmarks/gui_open_session.py``). Elsewhere (macOS, Windows, musl)
:func:`release_free_memory` does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable

__all__ = ["release_free_memory"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim  # glibc's name on every Linux it runs on
    except (OSError, AttributeError):  # not glibc (musl has no libc.so.6 and no malloc_trim)
        return None
    return trim


def release_free_memory() -> None:
    """Return the C library's free heap memory to the system where it can be (blocking for a few milliseconds: call
    it off the GUI thread)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
