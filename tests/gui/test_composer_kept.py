"""Nothing typed is lost: a prompt the window cannot send comes back to the composer (the banner says why), through
the real window and the loopback provider."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from tests.core.agent.conftest import text_reply
from tests.core.test_model_catalog import session_left_open
from tests.gui.test_main_window import server, window
from tests.gui.test_mcp import hanging_server, mcp_window, windows
from tests.gui.waiting import activated, until
from tests.loopback import LoopbackServer
from tiny_agent_core.agent.commands import skill_prompt
from tiny_agent_core.mcp.app_catalog import AppCatalog
from tiny_agent_core.timeline import UserItem
from tiny_agent_gui import session_controller
from tiny_agent_gui.main_window import MainWindow

__all__ = ["server", "window", "windows"]  # the fixtures


async def _type_and_send(window: MainWindow, qtbot: QtBot, text: str) -> None:
    """Type ``text`` in the composer and press Enter, as the user does."""
    await activated(window)
    editor = window.composer.editor
    editor.setFocus()
    qtbot.keyClicks(editor, text)
    qtbot.keyClick(editor, Qt.Key.Key_Return)


def _given_back(window: MainWindow, text: str) -> bool:
    """The composer holds ``text`` again, with the cursor at its end."""
    editor = window.composer.editor
    return editor.toPlainText() == text and editor.textCursor().position() == len(text)


async def test_a_prompt_without_a_provider_comes_back(window: MainWindow, qtbot: QtBot) -> None:
    window.services.settings.remove_profile("local")
    await _type_and_send(window, qtbot, "write the report")
    assert "Set up a provider first" in window.banner_text.text()
    assert _given_back(window, "write the report")
    assert window.composer.editor.hasFocus()
    assert window.controller.session is None


async def test_a_prompt_into_an_open_session_without_a_provider_comes_back(window: MainWindow, qtbot: QtBot) -> None:
    window.new_session()
    assert window.controller.session is not None
    window.services.settings.remove_profile("local")
    await _type_and_send(window, qtbot, "and then?")
    assert "Set up a provider first" in window.banner_text.text()
    assert _given_back(window, "and then?")


async def test_a_prompt_into_a_session_with_an_unfinished_operation_comes_back(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    workspace = Path(window.services.settings.workspaces[0])
    window.controller.open(session_left_open(workspace, "other-model"))  # its recovery is blocked: another model
    await window.controller.wait_idle()
    await until(lambda: not window.controller.busy)
    assert window.banner_action.text() == "Abort Unfinished Operation"
    requests = len(server.requests)
    await _type_and_send(window, qtbot, "carry on")
    assert "unfinished operation" in window.banner_text.text()
    assert window.banner_action.text() == "Recover"
    assert _given_back(window, "carry on")
    assert not window.controller.busy
    assert len(server.requests) == requests  # nothing was sent


async def test_a_prompt_with_a_lone_surrogate_comes_back(window: MainWindow, server: LoopbackServer) -> None:
    window.new_session()
    # A Qt signal cannot carry a lone surrogate (the composer's text never holds one); a prompt made in Python
    # can, e.g. from a file name decoded with surrogateescape.
    window.controller.submit("rename caf\udce9.txt")
    assert "lone surrogate" in window.banner_text.text()
    assert window.composer.text().startswith("rename caf")  # Qt cannot hold the surrogate: the rest comes back
    assert not window.controller.busy
    assert window.timeline is not None
    assert not list(window.timeline.items)  # nothing was written
    assert not server.requests


async def test_esc_while_the_mcp_servers_connect_gives_the_prompt_back(
    tmp_path: Path, server: LoopbackServer, qtbot: QtBot, windows: list[MainWindow]
) -> None:
    window = mcp_window(tmp_path, server, qtbot, AppCatalog({"slow": hanging_server()}, frozenset({"slow"})))
    windows.append(window)
    await _type_and_send(window, qtbot, "hello")
    assert window.composer.text() == ""  # sent: the editor is cleared
    await until(lambda: window.controller._connecting_mcp is not None, 5)
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Escape)
    await until(lambda: not window.controller.busy)
    assert _given_back(window, "hello")
    assert server.requests == []  # the model was never asked


async def test_what_was_typed_meanwhile_is_kept_after_the_prompt_given_back(window: MainWindow) -> None:
    window.composer.editor.setPlainText("a second thought")
    window.composer.give_back("the first prompt")
    assert _given_back(window, "the first prompt\n\na second thought")
    window.composer.give_back("the first prompt\n\na second thought")  # the same text: nothing doubles
    assert window.composer.text() == "the first prompt\n\na second thought"


async def _sent(window: MainWindow, qtbot: QtBot, text: str) -> None:
    """Type ``text``, press Enter, and wait until what it started has ended."""
    await _type_and_send(window, qtbot, text)
    await window.controller.wait_idle()
    await until(lambda: not window.controller.busy)


async def test_compact_typed_in_the_composer_compacts_the_session(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    server.queue(*(text_reply(f"answer {n}") for n in range(4)), text_reply("what happened so far"))
    for n in range(4):
        await _sent(window, qtbot, f"prompt {n}")
    await _sent(window, qtbot, "/compact")
    assert len(server.requests) == 5
    body = json.loads(server.requests[-1].body)
    assert "tools" not in body  # a compaction request, not a prompt
    assert all(message["content"] != "/compact" for message in body["messages"])
    assert window.statusBar().currentMessage() == "Compacted 2 messages (kept last 6)."
    assert window.composer.text() == ""
    assert not [item for item in _user_items(window) if item.text == "/compact"]


async def test_compact_typed_without_a_session_starts_none_and_comes_back(window: MainWindow, qtbot: QtBot) -> None:
    await _type_and_send(window, qtbot, "/compact")
    assert window.controller.session is None
    assert "Open or start a session first" in window.banner_text.text()
    assert _given_back(window, "/compact")


async def test_a_skill_typed_in_the_composer_sends_its_file_with_the_text(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    workspace = Path(window.services.settings.workspaces[0])
    skill = workspace / ".tiny-agent" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: Ship it\n---\nRun make deploy.\n")
    server.queue(text_reply("Deployed."))
    await _sent(window, qtbot, "/skill:deploy to staging")
    body = json.loads(server.requests[-1].body)
    sent = body["messages"][-1]
    assert sent == {"role": "user", "content": skill.read_text() + "\n\nUser: to staging"}
    assert window.composer.text() == ""


async def test_an_unknown_skill_says_so_and_the_text_comes_back(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    await _sent(window, qtbot, "/skill:nope do it")
    assert "Unknown skill: nope" in window.banner_text.text()
    assert _given_back(window, "/skill:nope do it")
    assert not server.requests
    assert not _user_items(window)


async def test_esc_while_a_skill_is_read_stops_and_gives_the_text_back(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = Path(window.services.settings.workspaces[0])
    skill = workspace / ".tiny-agent" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: Ship it\n---\nRun make deploy.\n")
    reading, release = threading.Event(), threading.Event()

    def slow_skill_prompt(*args: Any) -> str:  # a skill on a slow disk
        reading.set()
        release.wait(10)
        return skill_prompt(*args)

    monkeypatch.setattr(session_controller, "skill_prompt", slow_skill_prompt)
    server.queue(text_reply("Deployed."))
    await _type_and_send(window, qtbot, "/skill:deploy to staging")
    await until(reading.is_set)
    window.controller.cancel()  # Esc: nothing is durable yet
    await until(lambda: not window.controller.busy)
    release.set()
    assert _given_back(window, "/skill:deploy to staging")
    assert not server.requests
    assert not _user_items(window)


def _user_items(window: MainWindow) -> list[UserItem]:
    assert window.timeline is not None
    return [item for item in window.timeline.items if isinstance(item, UserItem)]


async def test_the_compact_button_beside_the_composer_is_session_compact(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    button = window.composer.compact_button
    assert button.toolTip() == "Compact the conversation (/compact, Ctrl+Shift+K)"
    assert not button.isEnabled()  # no session
    window.new_session()
    assert button.isEnabled()
    button.click()
    await window.controller.wait_idle()
    await until(lambda: not window.controller.busy)
    assert window.statusBar().currentMessage() == "Nothing to compact."
    assert not server.requests
