"""Request records are best effort: a pricing failure is an unknown cost and a failing recorder never fails a run."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.agent.conftest import Harness, text_reply
from tiny_agent_core.agent import requests
from tiny_agent_core.agent.requests import RequestRecord


async def test_a_failing_recorder_does_not_break_the_run(harness: Harness) -> None:
    def broken(record: RequestRecord) -> None:
        raise RuntimeError("ledger on fire")

    harness.agent._record_request = broken
    harness.server.queue(text_reply("hello there"))
    result = await harness.agent.run("hi")
    assert (result.outcome, result.answer) == ("completed", "hello there")


async def test_a_pricing_failure_is_an_unknown_cost(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**kwargs: Any) -> None:
        raise ValueError("price table unreadable")

    monkeypatch.setattr(requests, "price_request", broken)
    harness.server.queue(text_reply("hello there"))
    result = await harness.agent.run("hi")
    assert result.outcome == "completed"
    [record] = harness.records
    assert (record.cost.amount, record.cost.source, record.cost.detail) == (None, None, "pricing failed")
    assert (record.outcome, record.error_code, record.stop_reason) == ("settled", None, "stop")
