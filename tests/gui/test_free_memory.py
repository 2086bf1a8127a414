"""Memory freed by a session that was let go goes back to the system (glibc keeps it otherwise)."""

from __future__ import annotations

import platform
import sys

import pytest

from tiny_agent_gui import free_memory
from tiny_agent_gui.free_memory import release_free_memory


def _rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's"
)
def test_freed_heap_memory_is_returned() -> None:
    assert free_memory._malloc_trim() is not None
    texts = [("x" * 1000) + str(number) for number in range(100_000)]  # ~100 MB in glibc's heap, not pymalloc's
    keep = texts[::1000]  # a few survivors, so the heap cannot simply shrink from its top
    del texts
    before = _rss_kb()
    release_free_memory()
    assert _rss_kb() < before - 50_000  # most of the ~100 MB went back
    assert len(keep) == 100


def test_elsewhere_it_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    free_memory._malloc_trim.cache_clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    try:
        assert free_memory._malloc_trim() is None
        release_free_memory()  # no error
    finally:
        free_memory._malloc_trim.cache_clear()
