"""The session controller: re-opening the open session, unexpected errors, recovery, closing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.core.agent.conftest import text_reply
from tests.loopback import LoopbackServer
from tiny_agent_core.agent.loop import Agent
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.tools.approval import AllowListApprover, ToolSettings
from tiny_agent_gui.session_controller import Connection, SessionController


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


@pytest.fixture
async def controller(server: LoopbackServer) -> AsyncIterator[SessionController]:
    http = httpx.AsyncClient(trust_env=False)
    made = SessionController(
        client=ProviderClient(http),
        approver=AllowListApprover([]),
        tool_settings=ToolSettings.in_memory(),
        connection=lambda: Connection(custom_profile(server.base_url), "m", None),
    )
    yield made
    await made.wait_idle()
    await made.aclose()
    await http.aclose()
    made.deleteLater()  # destroyed now, while this test's event loop runs, not by a later garbage collection
    await asyncio.sleep(0)


def _record(signal: Any) -> list[Any]:
    seen: list[Any] = []
    signal.connect(seen.append)
    return seen


async def test_activating_the_open_session_keeps_it_writable(controller: SessionController, tmp_path: Path) -> None:
    controller.new(tmp_path)
    session = controller.session
    assert session is not None
    assert not session.read_only
    opened = _record(controller.session_opened)
    controller.open(session.store.path)
    assert controller.session is session
    assert not session.read_only
    assert opened == []


async def test_an_unexpected_error_leaves_a_recoverable_operation(
    controller: SessionController, server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unfinished = _record(controller.unfinished)
    finished = _record(controller.finished)
    controller.new(tmp_path)
    original = Agent._model_step

    async def broken(self: Agent, *args: Any, **kwargs: Any) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(Agent, "_model_step", broken)
    controller.submit("hello")
    await controller.wait_idle()
    assert len(unfinished) == 1
    assert "disk on fire" in unfinished[0]
    session = controller.session
    assert session is not None
    assert session.store.state.operation.kind == "run"

    monkeypatch.setattr(Agent, "_model_step", original)
    server.queue(text_reply("recovered"))
    controller.recover()
    await controller.wait_idle()
    assert session.store.state.operation.kind == "idle"
    assert finished[-1].answer == "recovered"


async def test_opening_a_session_left_open_recovers_it(
    controller: SessionController, server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller.new(tmp_path)
    session = controller.session
    assert session is not None
    path = session.store.path

    async def crash(self: Agent, *args: Any, **kwargs: Any) -> None:
        raise OSError("crash")

    monkeypatch.setattr(Agent, "_model_step", crash)
    controller.submit("hello")
    await controller.wait_idle()
    monkeypatch.undo()
    controller.close()
    finished = _record(controller.finished)
    server.queue(text_reply("after the crash"))
    controller.open(path)
    await asyncio.sleep(0)
    await controller.wait_idle()
    assert finished[-1].answer == "after the crash"


async def test_a_changed_base_url_reaches_the_next_request(tmp_path: Path) -> None:
    """Fixing a provider's URL in Settings must not leave the open session talking to the old server."""
    http = httpx.AsyncClient(trust_env=False)
    with LoopbackServer() as wrong, LoopbackServer() as right:
        target = [wrong]
        controller = SessionController(
            client=ProviderClient(http),
            approver=AllowListApprover([]),
            tool_settings=ToolSettings.in_memory(),
            connection=lambda: Connection(custom_profile(target[0].base_url), "m", None),
            max_steps=lambda: 7,
        )
        finished = _record(controller.finished)
        controller.new(tmp_path)
        wrong.queue(text_reply("old server"))
        controller.submit("one")
        await controller.wait_idle()
        target[0] = right
        right.queue(text_reply("new server"))
        controller.submit("two")
        await controller.wait_idle()
        assert [result.answer for result in finished] == ["old server", "new server"]
        assert len(wrong.requests) == 1
        await controller.aclose()
    await http.aclose()
    controller.deleteLater()
    await asyncio.sleep(0)
