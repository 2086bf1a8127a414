"""The awaited work of an operation and its cancellation (tiny_agent_core.agent.inflight)."""

from __future__ import annotations

import asyncio

import pytest

from tiny_agent_core.agent.inflight import Aborted, InFlight


async def test_work_runs_and_its_phase_is_known_only_while_it_runs() -> None:
    inflight = InFlight()
    seen: list[tuple[str, str | None]] = []

    async def work() -> int:
        seen.append((inflight.phase, inflight.call_id))
        return 7

    assert await inflight.run("tool", work(), "call-1") == 7
    assert seen == [("tool", "call-1")]
    assert (inflight.phase, inflight.call_id) == ("model", None)


async def test_cancel_turns_the_awaited_work_into_aborted() -> None:
    inflight = InFlight()
    started = asyncio.Event()

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    waiting = asyncio.ensure_future(inflight.run("model", forever()))
    await started.wait()
    inflight.cancel()
    with pytest.raises(Aborted):
        await waiting
    assert inflight.cancelled


async def test_work_after_an_abort_never_starts() -> None:
    inflight = InFlight()
    inflight.cancel()
    ran: list[bool] = []

    async def work() -> None:
        ran.append(True)

    with pytest.raises(Aborted):
        await inflight.run("tool", work(), "call-1")
    assert ran == []


async def test_reset_starts_a_new_operation_with_a_fresh_event() -> None:
    inflight = InFlight()
    inflight.cancel()
    old = inflight.event
    inflight.reset()
    assert not inflight.cancelled
    assert old.is_set()  # a tool still holding the old event keeps seeing its operation's abort

    async def work() -> str:
        return "ran"

    assert await inflight.run("model", work()) == "ran"


async def test_a_cancel_that_is_not_an_abort_propagates() -> None:
    inflight = InFlight()
    started = asyncio.Event()

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    outer = asyncio.ensure_future(inflight.run("model", forever()))
    await started.wait()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert not inflight.cancelled
