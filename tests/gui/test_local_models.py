"""The window's part of local models: learned dialects stored in the profile, tools the server dropped, the context
window asked of the server and shown per step, the dialect fields in Settings, outbound repairs in the inspector."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from pytestqt.qtbot import QtBot

from tests.core.agent.conftest import text_reply
from tests.gui.test_inspector import items_of
from tests.gui.test_main_window import server, window
from tests.gui.test_settings_dialog import Env
from tests.gui.test_transcript_support import Session
from tests.gui.waiting import until
from tests.loopback import LoopbackServer, Reply
from tiny_agent_core.agent.events import StepFinished
from tiny_agent_core.ledger import connect
from tiny_agent_core.messages import AssistantMessage
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_core.timeline import AssistantItem
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_core.usage import Usage
from tiny_agent_gui.inspector import InspectorPane
from tiny_agent_gui.main_window import MainWindow, Services
from tiny_agent_gui.status_bar import context_text, window_text

__all__ = ["server", "window"]  # the fixtures, shared with the main window's tests


def _json_answer(message: dict[str, Any], finish: str, prompt_tokens: int) -> Reply:
    """A non-streamed answer as llama-cpp-python sends it."""
    return Reply.json(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "smollm2",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 9, "total_tokens": prompt_tokens + 9},
        }
    )


def _set_context(window: MainWindow, tokens: int | None) -> None:
    settings = window.services.settings
    config = settings.profile("local")
    assert config is not None
    settings.update_profile(replace(config, context_length=tokens))


async def test_a_server_that_cannot_stream_tool_turns_is_remembered_in_the_profile(
    window: MainWindow, server: LoopbackServer, tmp_path: Path
) -> None:
    settings_file = tmp_path / "config" / "settings.json"
    window.services.settings.path = settings_file
    workspace = Path(window.services.settings.workspaces[0])
    (workspace / "a.txt").write_text("first line\n", encoding="utf-8")
    call = {"id": "call_0", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.txt"}'}}
    server.queue(
        Reply.sse(b""),  # llama-cpp-python: "Automatic streaming tool choice is not supported" → 200, no body
        _json_answer({"content": None, "tool_calls": [call]}, "tool_calls", 900),
        _json_answer({"content": "It says first line."}, "stop", 950),
    )
    window.composer.submitted.emit("read a.txt")
    await until(lambda: len(server.requests) == 3 and not window.controller.busy)
    await window.controller.wait_idle()

    sent = [request.json() for request in server.requests]
    assert sent[0].get("stream") is True
    assert "stream" not in sent[1]
    assert "stream" not in sent[2]
    config = window.services.settings.profile("local")
    assert config is not None
    assert config.stream_tools is False
    assert AppSettings.load(settings_file.parent).profile("local") == config  # saved
    message = window.statusBar().currentMessage()
    assert message == "Loopback: tool turns are sent without streaming (the server cannot stream them)."
    assert not window.controller.settings_changed_since_start()  # the running agent already sent it that way

    answers = [item for item in window.timeline.items if isinstance(item, AssistantItem)] if window.timeline else []
    assert answers[-1].text == "It says first line."
    window.inspector.show_item(answers[0])
    step = window.inspector.step.toPlainText()
    assert "outbound repairs: tool_choice_auto, tools_not_streamed\n" in step
    window.inspector.show_item(answers[-1])  # the request after the call: its null content was sent as ""
    assert "tools_not_streamed, tool_call_content_empty_string" in window.inspector.step.toPlainText()
    await asyncio.sleep(0.1)  # qasync: deferred closing of the dropped streams runs while the loop does (teardown)


async def test_tools_the_server_left_out_are_shown_with_what_to_do(window: MainWindow, server: LoopbackServer) -> None:
    server.queue(text_reply("I cannot see any tools.", usage=(12, 5)))  # far fewer tokens than the tool definitions
    window.composer.submitted.emit("list the files")
    await until(lambda: len(server.requests) == 1 and not window.controller.busy)
    await window.controller.wait_idle()
    assert window.banner.isVisible()
    text = window.banner_text.text()
    assert "left the tools out of the prompt" in text
    assert "--jinja" in text
    assert "Settings › Providers" in text
    assert window.banner_action.text().replace("&", "") == "Open provider settings"
    await asyncio.sleep(0.1)  # see the first test


async def test_the_context_label_shows_the_last_prompt_against_the_window(
    window: MainWindow, server: LoopbackServer
) -> None:
    _set_context(window, 4096)
    window.settings_saved()
    assert window.status_context.text() == "context – / 4k"
    server.queue(text_reply("short", usage=(3195, 2)), text_reply("long", usage=(3600, 2)))
    window.composer.submitted.emit("first")
    await until(lambda: len(server.requests) == 1 and not window.controller.busy)
    await window.controller.wait_idle()
    assert window.status_context.text() == "context 3.2k / 4k (78%)"
    assert not window.status_context.warning
    assert server.requests[0].json().get("max_tokens") is not None  # the agent was given the window
    window.composer.submitted.emit("second")
    await until(lambda: len(server.requests) == 2 and not window.controller.busy)
    await window.controller.wait_idle()
    assert window.status_context.text() == "context 3.6k / 4k (88%)"
    assert window.status_context.warning
    assert "compact" in window.status_context.toolTip()
    await asyncio.sleep(0.1)  # see the first test


async def test_without_a_window_the_label_says_unknown(window: MainWindow, server: LoopbackServer) -> None:
    server.queue(text_reply("hi", usage=(30, 2)))
    window.composer.submitted.emit("hello")
    await until(lambda: len(server.requests) == 1 and not window.controller.busy)
    await window.controller.wait_idle()
    assert window.status_context.text() == "context unknown"
    assert "Settings › Providers" in window.status_context.toolTip()
    await asyncio.sleep(0.1)  # see the first test


@pytest.fixture
async def asking_window(tmp_path: Path, server: LoopbackServer, qtbot: QtBot) -> AsyncIterator[MainWindow]:
    """A window that asks its (loopback llama.cpp) server for the context window."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = AppSettings()
    settings.add_profile(replace(ProfileConfig.custom("local", server.base_url, name="llama"), model="smollm2"))
    settings.active_profile = "local"
    settings.add_workspace(workspace)
    server.queue(Reply.json({"default_generation_settings": {"n_ctx": 8192}}))  # GET /props
    http = httpx.AsyncClient(trust_env=False)
    ledger = connect(tmp_path / "index.sqlite3")
    services = Services(ProviderClient(http), ledger, settings, KeyStore(environ={}), ToolSettings.in_memory())
    made = MainWindow(services)
    qtbot.addWidget(made)
    made.show()
    yield made
    await made.context_windows.wait()
    await made.controller.wait_idle()
    await made.controller.aclose()
    ledger.close()
    await http.aclose()


async def test_the_window_asks_the_server_once_and_passes_it_to_the_agent(
    asking_window: MainWindow, server: LoopbackServer
) -> None:
    await asking_window.context_windows.wait()
    asking_window.settings_saved()  # asks (again, if the first ask ran before the test's loop did)
    await until(lambda: len(server.requests) == 1)
    await asking_window.context_windows.wait()
    assert server.requests[0].path == "/props"
    assert asking_window.status_context.text() == "context – / 8k"
    connection = asking_window.connection()
    assert connection is not None
    assert connection.profile.context_length == 8192
    server.queue(text_reply("ok", usage=(4096, 2)))
    asking_window.composer.submitted.emit("hello")  # opens a session: the window is cached, not asked again
    await until(lambda: len(server.requests) == 2 and not asking_window.controller.busy)
    await asking_window.controller.wait_idle()
    assert server.requests[1].path == "/v1/chat/completions"
    assert asking_window.status_context.text() == "context 4.1k / 8k (50%)"
    await asyncio.sleep(0.1)  # see the first test


def test_context_words() -> None:
    assert window_text(4096) == "4k"
    assert window_text(131072) == "128k"
    assert window_text(4000) == "4k"
    assert window_text(32000) == "32k"
    assert context_text(None, None) == ("context unknown", None)
    assert context_text(3195, 4096)[0] == "context 3.2k / 4k (78%)"


def test_the_providers_page_round_trips_the_dialect_and_context(qtbot: QtBot, tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.settings.add_profile(ProfileConfig.from_preset("lmstudio", "lmstudio"))
    env.settings.add_profile(ProfileConfig.from_preset("openai", "openai"))
    dialog = env.dialog(qtbot)
    page = dialog.providers
    assert page.select("lmstudio")
    combos = page.dialect_combos
    assert combos["tool_choice_auto"].currentText() == "Provider default (yes)"  # a local server's dialect
    assert combos["null_content"].currentText() == "Provider default (no)"
    assert combos["stream_tools"].currentText() == "Provider default (yes)"
    assert page.context_edit.text() == ""
    assert page.context_edit.placeholderText() == "blank: ask the server"
    combos["stream_tools"].setCurrentIndex(combos["stream_tools"].findData(False))
    combos["null_content"].setCurrentIndex(combos["null_content"].findData(True))
    page.context_edit.setText("4096")
    assert page.select("openai")
    assert combos["tool_choice_auto"].currentText() == "Provider default (no)"
    assert combos["stream_tools"].currentIndex() == 0
    assert page.context_edit.text() == ""
    assert page.select("lmstudio")
    assert combos["stream_tools"].currentData() is False
    assert page.context_edit.text() == "4096"
    assert dialog.save()

    saved = AppSettings.load(env.config).profile("lmstudio")
    assert saved is not None
    assert (saved.tool_choice_auto, saved.stream_tools, saved.null_content, saved.context_length) == (
        None,
        False,
        True,
        4096,
    )
    again_dialog = env.dialog(qtbot)
    again = again_dialog.providers
    assert again.select("lmstudio")
    assert again.dialect_combos["stream_tools"].currentText() == "No"
    again.context_edit.clear()  # blank: ask the server again
    again.dialect_combos["stream_tools"].setCurrentIndex(0)
    assert again_dialog.save()
    cleared = AppSettings.load(env.config).profile("lmstudio")
    assert cleared is not None
    assert (cleared.stream_tools, cleared.context_length) == (None, None)
    for combo, name in (
        (again.dialect_combos["tool_choice_auto"], "Send tool_choice auto with the tools"),
        (again.dialect_combos["stream_tools"], "Stream requests that offer tools"),
        (again.dialect_combos["null_content"], "Server accepts null content in tool-call messages"),
        (again.context_edit, "Context length in tokens"),
    ):
        assert combo.accessibleName() == name
    labels = {label.text(): label.buddy() for label in page.form.findChildren(type(page.keyring_label))}
    assert labels['Send tool_&choice "auto":'] is combos["tool_choice_auto"]
    assert labels["Stream too&l turns:"] is combos["stream_tools"]
    assert labels["Null content allowe&d:"] is combos["null_content"]
    assert labels["Conte&xt length:"] is page.context_edit


def test_the_inspector_shows_outbound_repairs_beside_the_inbound_ones(qtbot: QtBot, tmp_path: Path) -> None:
    session = Session(tmp_path)
    session.full_run("读 a.txt", "a.txt", "第一行", "It is 第一行.")
    try:
        pane = InspectorPane(timeline=session.timeline)
        qtbot.addWidget(pane)
        first, last = items_of(session, AssistantItem)[0], items_of(session, AssistantItem)[-1]
        pane.note_step(
            StepFinished(
                first.step.step_id,
                first.step.attempt_id,
                AssistantMessage(content=""),
                "tool_calls",
                Usage(3000, 5),
                None,
                None,
                (),
                (),
                None,
                None,
                outbound_repairs=("tool_choice_auto", "tools_not_streamed"),
                context_window=4096,
            )
        )
        pane.show_item(first)
        text = pane.step.toPlainText()
        assert "outbound repairs: tool_choice_auto, tools_not_streamed" in text
        assert "dialect repairs: " in text
        assert text.index("dialect repairs: ") < text.index("outbound repairs: ")
        pane.show_item(last)
        assert "outbound repairs: not recorded" in pane.step.toPlainText()  # not seen live, not in the file
        assert "context: unknown window" in pane.step.toPlainText()
        captured = {"status": 200, "outboundRepairs": ["tool_call_content_empty_string"]}
        pane.set_capture_loader(lambda _attempt: [captured])  # a reopened session: the ledger kept the capture
        pane.show_item(last)
        pane.tabs.setCurrentWidget(pane.step)
        assert "outbound repairs: tool_call_content_empty_string\n" in pane.step.toPlainText()
        assert "context: unknown window" in pane.step.toPlainText()  # recorded nowhere
    finally:
        session.store.close()
