"""Automatic compaction before a prompt, through the real window and the loopback provider: when the last request
used at least the threshold of the model's known context window, sending a prompt first compacts the session (a
request without tools), then runs the prompt; a compaction that fails or is stopped gives the prompt back."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from tests.core.agent.conftest import text_reply
from tests.gui.test_main_window import server, window
from tests.gui.waiting import activated, until
from tests.loopback import LoopbackServer, Reply
from tiny_agent_core.agent.loop import RunResult
from tiny_agent_core.session import reduce_session
from tiny_agent_core.session.state import state_to_json
from tiny_agent_core.settings import AppSettings
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_gui.main_window import MainWindow
from tiny_agent_gui.settings.tools_page import ToolsPage

__all__ = ["server", "window"]  # the fixtures

WINDOW = 4096
"""The model's context window in these tests (set in the provider profile)."""


def _set_context(window: MainWindow, tokens: int | None) -> None:
    settings = window.services.settings
    config = settings.profile("local")
    assert config is not None
    settings.update_profile(replace(config, context_length=tokens))


async def _send(window: MainWindow, qtbot: QtBot, text: str) -> None:
    """Type ``text`` in the composer and press Enter, as the user does."""
    await activated(window)
    editor = window.composer.editor
    editor.setFocus()
    qtbot.keyClicks(editor, text)
    qtbot.keyClick(editor, Qt.Key.Key_Return)


async def _sent(window: MainWindow, qtbot: QtBot, text: str) -> None:
    """Send ``text`` and wait until what it started has ended."""
    await _send(window, qtbot, text)
    await window.controller.wait_idle()
    await until(lambda: not window.controller.busy)


async def _four_prompts_the_last_at(window: MainWindow, server: LoopbackServer, qtbot: QtBot, tokens: int) -> None:
    """Four prompts answered, the last request's prompt taking ``tokens`` of the window (8 messages: 2 to compact)."""
    _set_context(window, WINDOW)
    server.queue(*(text_reply(f"answer {n}", usage=(100 * (n + 1), 5)) for n in range(3)))
    server.queue(text_reply("answer 3", usage=(tokens, 5)))
    for n in range(4):
        await _sent(window, qtbot, f"prompt {n}")
    assert len(server.requests) == 4


def _valid_session(window: MainWindow) -> dict[str, Any]:
    """The session file, reopened with the strict reducer: its state as JSON."""
    session = window.controller.session
    assert session is not None
    return state_to_json(reduce_session(session.store.path.read_bytes()))


async def test_a_prompt_after_a_request_over_the_threshold_compacts_first(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    await _four_prompts_the_last_at(window, server, qtbot, 3600)  # 88 % of 4,096
    results: list[RunResult] = []
    window.controller.finished.connect(results.append)
    shown: list[str] = []
    window.statusBar().messageChanged.connect(shown.append)
    server.queue(text_reply("what happened so far", usage=(3700, 40)), text_reply("answer 4", usage=(900, 5)))
    await _sent(window, qtbot, "prompt 4")
    assert len(server.requests) == 6
    compaction, run = (json.loads(request.body) for request in server.requests[4:])
    assert "tools" not in compaction  # the compaction request
    assert "prompt 4" not in json.dumps(compaction)
    assert "tools" in run
    assert run["messages"][1]["content"].startswith("[Compacted history]\nwhat happened so far")
    assert run["messages"][-1] == {"role": "user", "content": "prompt 4"}
    notice = "Before sending: the last request used 88 % of the model's 4,096-token context. "
    assert [(result.kind, result.outcome, result.answer) for result in results] == [
        ("compaction", "completed", notice + "Compacted 2 messages (kept last 6)."),
        ("run", "completed", "answer 4"),
    ]
    assert notice + "Compacted 2 messages (kept last 6)." in shown  # in the status bar, before the run's answer
    assert window.composer.text() == ""
    state = _valid_session(window)
    assert state["operation"] == {"kind": "idle"}
    assert len(state["activeContext"]) == 9  # the summary, the 6 kept, the new prompt and its answer
    # the next prompt: the last request (900 tokens) is far below the threshold, and a compaction settled before it
    server.queue(text_reply("answer 5", usage=(1000, 5)))
    await _sent(window, qtbot, "prompt 5")
    assert len(server.requests) == 7
    assert "tools" in json.loads(server.requests[-1].body)


async def test_below_the_threshold_without_a_window_or_turned_off_nothing_is_compacted(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    await _four_prompts_the_last_at(window, server, qtbot, 3400)  # 83 %
    server.queue(*(text_reply(f"answer {n}", usage=(3600, 5)) for n in range(4, 7)))
    await _sent(window, qtbot, "prompt 4")
    _set_context(window, None)  # the window is not known: unknown is not zero
    await _sent(window, qtbot, "prompt 5")
    _set_context(window, WINDOW)
    window.services.settings.auto_compact = None  # turned off
    await _sent(window, qtbot, "prompt 6")
    assert len(server.requests) == 7
    assert all("tools" in json.loads(request.body) for request in server.requests)


async def test_a_failed_compaction_gives_the_prompt_back_unsent(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    await _four_prompts_the_last_at(window, server, qtbot, 3600)
    server.queue(Reply.error(400, {"error": {"message": "summaries are not allowed here"}}))
    await _sent(window, qtbot, "prompt 4")
    assert len(server.requests) == 5  # the compaction only: the prompt was not sent
    assert "tools" not in json.loads(server.requests[-1].body)
    assert window.composer.text() == "prompt 4"
    assert window.statusBar().currentMessage().startswith("Not sent: the compaction before it failed (the last")
    state = _valid_session(window)
    assert state["operation"] == {"kind": "idle"}
    assert all(message.get("content") != "prompt 4" for message in state["transcript"])


async def test_esc_during_the_compaction_stops_it_and_gives_the_prompt_back(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    await _four_prompts_the_last_at(window, server, qtbot, 3600)
    server.queue(text_reply("a summary that takes its time " * 20, pace=0.5))
    await _send(window, qtbot, "prompt 4")
    await until(lambda: len(server.requests) == 5)
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Escape)
    await window.controller.wait_idle()
    await until(lambda: not window.controller.busy)
    assert len(server.requests) == 5
    assert window.composer.text() == "prompt 4"
    assert "was stopped" in window.statusBar().currentMessage()
    state = _valid_session(window)
    assert state["operation"] == {"kind": "idle"}
    assert len(state["activeContext"]) == 8  # nothing compacted


def test_the_tools_page_turns_it_off_and_sets_the_threshold(qtbot: QtBot) -> None:
    settings = AppSettings()
    page = ToolsPage(ToolSettings.in_memory(), list, lambda _parent, _title: None, settings)
    qtbot.addWidget(page)
    assert page.compact_check.isChecked()
    assert page.compact_spin.value() == 85
    assert page.auto_compact() == 85
    page.compact_spin.setValue(70)
    assert page.auto_compact() == 70
    page.compact_check.setChecked(False)
    assert not page.compact_spin.isEnabled()
    assert page.auto_compact() is None
    settings.auto_compact = None
    page = ToolsPage(ToolSettings.in_memory(), list, lambda _parent, _title: None, settings)
    qtbot.addWidget(page)
    assert not page.compact_check.isChecked()
    assert page.compact_spin.value() == 85
