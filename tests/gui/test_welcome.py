"""The first-run welcome view: its two signals and what it says about keys and telemetry."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from tiny_agent_core.secrets import KeyringStatus
from tiny_agent_gui.welcome import WelcomeView


def test_set_up_a_provider_is_a_signal(qtbot: QtBot) -> None:
    view = WelcomeView()
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.setupProviderRequested, timeout=1000):
        qtbot.mouseClick(view.setup_button, Qt.MouseButton.LeftButton)


def test_open_folder_emits_the_chosen_folder_and_nothing_when_cancelled(qtbot: QtBot) -> None:
    answers = ["/home/me/project", None]
    asked: list[str] = []

    def chooser(parent: QWidget, title: str) -> str | None:
        asked.append(title)
        return answers.pop(0)

    view = WelcomeView(chooser=chooser)
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.openFolderRequested, timeout=1000) as blocker:
        qtbot.mouseClick(view.open_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["/home/me/project"]
    with qtbot.assertNotEmitted(view.openFolderRequested):
        view.open_button.click()
    assert len(asked) == 2


def test_it_says_where_keys_go_and_that_there_is_no_telemetry(qtbot: QtBot) -> None:
    view = WelcomeView(KeyringStatus(True, "SecretService Keyring"))
    qtbot.addWidget(view)
    assert "system keyring" in view.privacy.text()
    assert "no telemetry" in view.privacy.text()
    missing = WelcomeView(KeyringStatus(False, "fail Keyring", "No system keyring is available."))
    qtbot.addWidget(missing)
    assert "No system keyring is available." in missing.privacy.text()
    assert "environment variable" in missing.privacy.text()


def test_buttons_have_mnemonics_and_accessible_names(qtbot: QtBot) -> None:
    view = WelcomeView()
    qtbot.addWidget(view)
    for button in (view.setup_button, view.open_button):
        assert "&" in button.text()
        assert button.accessibleName()
