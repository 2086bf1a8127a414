"""The approval prompt: every answer, edited and invalid arguments, keyboard, and the non-blocking approver."""

from __future__ import annotations

import asyncio
import json

import pytest
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QApplication, QPushButton, QWidget
from pytestqt.qtbot import QtBot

from tiny_agent_core.tools.approval import ApprovalAnswer, ApprovalRequest, Choice
from tiny_agent_core.tools.base import Preview
from tiny_agent_gui.approval_dialog import ApprovalDialog, DialogApprover, diff_colors, parse_arguments

DIFF = "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n context\n-old line\n+new line ✓ 你好\n"
WRITE = ApprovalRequest("write", {"path": "app.py", "content": "new line ✓ 你好\n"}, Preview("diff", DIFF), "call_1")
BASH = ApprovalRequest("bash", {"command": "rm -rf build && make"}, Preview("command", "rm -rf build && make"))


def make(qtbot: QtBot, request: ApprovalRequest = WRITE) -> ApprovalDialog:
    dialog = ApprovalDialog(request)
    qtbot.addWidget(dialog)
    with qtbot.waitActive(dialog):  # window shortcuts (Ctrl+Enter) need the active window
        dialog.show()
        dialog.activateWindow()
    return dialog


def buttons(dialog: ApprovalDialog) -> dict[Choice, QPushButton]:
    return {
        Choice.ALLOW_ONCE: dialog.allow_once_button,
        Choice.ALLOW_SESSION: dialog.allow_session_button,
        Choice.ALLOW_ALWAYS: dialog.allow_always_button,
        Choice.DENY: dialog.deny_button,
    }


@pytest.mark.parametrize("choice", list(Choice))
def test_each_button_answers_with_its_choice(qtbot: QtBot, choice: Choice) -> None:
    dialog = make(qtbot)
    with qtbot.waitSignal(dialog.finished, timeout=1000):
        qtbot.mouseClick(buttons(dialog)[choice], Qt.MouseButton.LeftButton)
    assert dialog.answer() == ApprovalAnswer(choice)
    assert not dialog.isVisible()


def test_the_prompt_shows_tool_diff_and_full_arguments(qtbot: QtBot) -> None:
    dialog = make(qtbot)
    assert "write" in dialog.windowTitle()
    assert dialog.preview is not None
    assert dialog.preview.toPlainText() == DIFF.rstrip("\n")
    assert json.loads(dialog.arguments_edit.toPlainText()) == dict(WRITE.arguments)
    colors = diff_colors(dialog.palette())
    backgrounds = {}
    block = dialog.preview.document().begin()
    while block.isValid():
        backgrounds[block.text()] = block.blockFormat().background().color()
        block = block.next()
    assert backgrounds["+new line ✓ 你好"] == colors["added"]
    assert backgrounds["-old line"] == colors["removed"]
    assert backgrounds["@@ -1,2 +1,2 @@"] == colors["hunk"]
    assert colors["added"] != colors["removed"]
    assert dialog.allow_once_button.isDefault()
    assert all(button.accessibleName() for button in buttons(dialog).values())


def test_bash_shows_the_command(qtbot: QtBot) -> None:
    dialog = make(qtbot, BASH)
    assert dialog.preview is not None
    assert dialog.preview.toPlainText() == "rm -rf build && make"
    assert dialog.preview.accessibleName() == "Command"


def test_the_real_target_and_warnings_are_shown_above_the_diff(qtbot: QtBot) -> None:
    warnings = ("The target is executable (mode 0755).", "The target is inside a .git/ folder: <hooks> run.")
    preview = Preview("diff", DIFF, target="/work/repo/.git/hooks/pre-commit", warnings=warnings)
    dialog = make(qtbot, ApprovalRequest("write", {"path": "notes.md", "content": "x"}, preview))
    assert dialog.target_label is not None
    assert dialog.warnings_label is not None
    assert dialog.target_label.isVisible()
    assert dialog.warnings_label.isVisible()
    assert "/work/repo/.git/hooks/pre-commit" in dialog.target_label.text()
    assert dialog.target_label.accessibleName() == "Real target"
    assert "&lt;hooks&gt;" in dialog.warnings_label.text()  # escaped, not markup from the repository
    assert dialog.warnings_label.accessibleDescription() == " ".join(warnings)
    layout = dialog.layout()
    assert layout.indexOf(dialog.target_label) < layout.indexOf(dialog.warnings_label) < layout.indexOf(dialog.preview)


def test_no_target_line_or_warnings_for_a_plain_change(qtbot: QtBot) -> None:
    dialog = make(qtbot)
    assert dialog.target_label is None
    assert dialog.warnings_label is None


def test_plain_arguments_have_no_separate_preview_and_preview_errors_show(qtbot: QtBot) -> None:
    request = ApprovalRequest("edit", {"path": "x"}, Preview("arguments", "{}", error="the edit would fail"))
    dialog = make(qtbot, request)
    assert dialog.preview is None
    assert any("the edit would fail" in label.text() for label in dialog.findChildren(type(dialog.arguments_status)))


def test_edited_arguments_are_returned(qtbot: QtBot) -> None:
    dialog = make(qtbot, BASH)
    dialog.arguments_edit.setPlainText(json.dumps({"command": "make"}))
    assert "Edited" in dialog.arguments_status.text()
    qtbot.mouseClick(dialog.allow_session_button, Qt.MouseButton.LeftButton)
    assert dialog.answer() == ApprovalAnswer(Choice.ALLOW_SESSION, {"command": "make"})


def test_reformatted_but_equal_arguments_count_as_unedited(qtbot: QtBot) -> None:
    dialog = make(qtbot, BASH)
    dialog.arguments_edit.setPlainText('{"command":"rm -rf build && make"}')
    qtbot.mouseClick(dialog.allow_once_button, Qt.MouseButton.LeftButton)
    assert dialog.answer() == ApprovalAnswer(Choice.ALLOW_ONCE)


@pytest.mark.parametrize(("text", "problem"), [("{oops", "not valid JSON"), ("[1, 2]", "JSON object")])
def test_invalid_arguments_disable_allowing(qtbot: QtBot, text: str, problem: str) -> None:
    dialog = make(qtbot, BASH)
    dialog.arguments_edit.setPlainText(text)
    allow = [dialog.allow_once_button, dialog.allow_session_button, dialog.allow_always_button]
    assert not any(button.isEnabled() for button in allow)
    assert problem in dialog.arguments_status.text()
    dialog.arguments_edit.setFocus()
    qtbot.keyClick(dialog.arguments_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert dialog.isVisible()  # Ctrl+Enter cannot allow invalid arguments
    dialog.arguments_edit.setPlainText('{"command": "ls"}')
    assert all(button.isEnabled() for button in allow)
    dialog.arguments_edit.setPlainText(text)
    qtbot.mouseClick(dialog.deny_button, Qt.MouseButton.LeftButton)
    assert dialog.answer() == ApprovalAnswer.deny()


def test_ctrl_enter_allows_once_even_from_the_editor(qtbot: QtBot) -> None:
    dialog = make(qtbot, BASH)
    dialog.arguments_edit.setFocus()
    with qtbot.waitSignal(dialog.finished, timeout=1000):
        qtbot.keyClick(dialog.arguments_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert dialog.answer() == ApprovalAnswer(Choice.ALLOW_ONCE)
    assert json.loads(dialog.arguments_edit.toPlainText()) == dict(BASH.arguments)  # no newline typed into it


def test_escape_denies_with_the_reason(qtbot: QtBot) -> None:
    dialog = make(qtbot, BASH)
    dialog.reason_edit.setFocus()
    qtbot.keyClicks(dialog.reason_edit, "do not delete build")
    with qtbot.waitSignal(dialog.finished, timeout=1000):
        qtbot.keyClick(dialog.reason_edit, Qt.Key.Key_Escape)
    assert dialog.answer() == ApprovalAnswer(Choice.DENY, reason="do not delete build")


def test_closing_the_window_denies(qtbot: QtBot) -> None:
    dialog = make(qtbot, BASH)
    dialog.close()
    assert dialog.answer() == ApprovalAnswer.deny()


def test_parse_arguments() -> None:
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments("null")[0] is None


# -- DialogApprover -------------------------------------------------------------------------------------------


def open_dialogs() -> list[ApprovalDialog]:
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, ApprovalDialog) and w.isVisible()]


async def wait_for(condition: object, timeout: float = 2.0) -> None:
    """Poll with ``asyncio.sleep`` (not ``qtbot.wait``): the qasync loop is what runs Qt here."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_dialog_approver_answers_without_blocking_the_loop(qtbot: QtBot) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    parent = QWidget()
    qtbot.addWidget(parent)
    approver = DialogApprover(parent)
    beat = asyncio.create_task(ticker())
    ask = asyncio.create_task(approver.ask(BASH))
    await wait_for(lambda: [d for d in parent.findChildren(ApprovalDialog) if d.isVisible()])
    dialog = parent.findChildren(ApprovalDialog)[0]
    before = ticks
    await asyncio.sleep(0.05)
    assert ticks > before  # the loop kept running while the dialog was open
    assert not ask.done()
    dialog.arguments_edit.setPlainText('{"command": "make"}')
    dialog.allow_always_button.click()
    answer = await asyncio.wait_for(ask, 2)
    beat.cancel()
    assert answer == ApprovalAnswer(Choice.ALLOW_ALWAYS, {"command": "make"})


async def test_cancelling_the_ask_closes_the_dialog(qtbot: QtBot) -> None:
    main_window = QWidget()  # closing the last window would quit the app and stop the loop
    qtbot.addWidget(main_window)
    main_window.show()
    approver = DialogApprover()
    ask = asyncio.create_task(approver.ask(WRITE))
    await wait_for(lambda: open_dialogs())
    ask.cancel()
    with pytest.raises(asyncio.CancelledError):
        await ask
    await wait_for(lambda: not open_dialogs())


class FakeDialog(QObject):
    """Stands in for the dialog: records ``open`` and finishes when told."""

    finished = Signal(int)

    def __init__(self, request: ApprovalRequest, parent: QWidget | None) -> None:
        super().__init__()
        self.request = request
        self.opened = False
        self.rejected = False
        self._answer = ApprovalAnswer.deny()

    def answer(self) -> ApprovalAnswer:
        return self._answer

    def open(self) -> None:
        self.opened = True

    def reject(self) -> None:
        self.rejected = True
        self.finished.emit(0)

    def give(self, answer: ApprovalAnswer) -> None:
        self._answer = answer
        self.finished.emit(1)


async def test_the_future_resolves_from_the_finished_signal() -> None:
    made: list[FakeDialog] = []

    def factory(request: ApprovalRequest, parent: QWidget | None) -> FakeDialog:
        made.append(FakeDialog(request, parent))
        return made[-1]

    approver = DialogApprover(dialog_factory=factory)
    ask = asyncio.create_task(approver.ask(BASH))
    await asyncio.sleep(0)
    assert made[0].opened
    assert made[0].request is BASH
    made[0].give(ApprovalAnswer(Choice.ALLOW_SESSION))
    made[0].give(ApprovalAnswer.deny())  # a second finish changes nothing
    assert await ask == ApprovalAnswer(Choice.ALLOW_SESSION)
    assert not made[0].rejected
