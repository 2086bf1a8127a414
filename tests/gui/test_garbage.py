"""Cyclic garbage is collected on the GUI thread only while the collector is installed."""

from __future__ import annotations

import gc

from tiny_agent_gui.garbage import GuiThreadCollector


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_collector_takes_over_from_the_automatic_collector(qapp: object) -> None:
    was_enabled = gc.isenabled()
    collector = GuiThreadCollector(interval_ms=10)
    try:
        assert not gc.isenabled()
        threshold = gc.get_threshold()[0]
        for _ in range(threshold + 10):
            _Cycle()
        assert gc.get_count()[0] > threshold  # nothing collected behind our back
        collector.check()
        assert gc.get_count()[0] < threshold
    finally:
        collector.stop()
    assert gc.isenabled()  # handed back to Python
    if not was_enabled:  # the test session's own collector is still in charge
        gc.disable()
