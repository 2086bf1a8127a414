"""The providers page and API kinds: a preset shows its fixed kind, a custom profile chooses one, and the dialect
switches are shown for OpenAI Chat Completions only."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from tests.gui.test_settings_dialog import Env
from tiny_agent_core.providers.api_kinds import API_KINDS
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_gui.settings.providers_page import PRESET_ORDER, ProvidersPage


def _dialect_shown(page: ProvidersPage) -> bool:
    return all(combo.isVisibleTo(page) for combo in page.dialect_combos.values())


def test_a_preset_shows_its_kind_and_a_custom_profile_chooses_one(qtbot: QtBot, tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.settings.add_profile(ProfileConfig.from_preset("anthropic", "claude"))
    env.settings.add_profile(ProfileConfig.from_preset("ollama", "ollama"))
    dialog = env.dialog(qtbot)
    page = dialog.providers
    assert {"anthropic", "openai-responses"} <= set(PRESET_ORDER)
    assert [page.api_combo.itemData(i) for i in range(page.api_combo.count())] == list(API_KINDS)
    assert page.api_combo.accessibleName() == "API kind"

    assert page.select("ollama")
    assert page.api_combo.currentData() == "openai-chat"
    assert not page.api_combo.isEnabled()
    assert _dialect_shown(page)
    assert page.select("claude")
    assert page.api_combo.currentData() == "anthropic"
    assert page.api_combo.currentText() == "Anthropic Messages"
    assert not page.api_combo.isEnabled()
    assert not _dialect_shown(page)

    custom = page.add_profile("custom")
    page.url_edit.setText("https://llm.example/v1")
    assert page.api_combo.isEnabled()
    assert page.api_combo.currentData() == "openai-chat"
    assert _dialect_shown(page)
    page.api_combo.setCurrentIndex(page.api_combo.findData("openai-responses"))
    assert not _dialect_shown(page)
    assert dialog.save()

    saved = AppSettings.load(env.config).profile(custom.id)
    assert saved is not None
    assert saved.api == "openai-responses"
    assert saved.provider_profile().api == "openai-responses"
    again_dialog = env.dialog(qtbot)
    again = again_dialog.providers
    assert again.select(custom.id)
    assert again.api_combo.currentData() == "openai-responses"
    again.api_combo.setCurrentIndex(again.api_combo.findData("openai-chat"))
    assert _dialect_shown(again)
    assert again_dialog.save()
    back = AppSettings.load(env.config).profile(custom.id)
    assert back is not None
    assert back.api is None  # the default kind is not written


def test_server_state_is_offered_for_the_responses_api_only_and_saved(qtbot: QtBot, tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.settings.add_profile(ProfileConfig.from_preset("ollama", "ollama"))
    dialog = env.dialog(qtbot)
    page = dialog.providers
    assert page.select("ollama")
    assert not page.server_state_check.isVisibleTo(page)

    custom = page.add_profile("custom")
    page.url_edit.setText("https://llm.example/v1")
    assert not page.server_state_check.isVisibleTo(page)
    page.api_combo.setCurrentIndex(page.api_combo.findData("openai-responses"))
    assert page.server_state_check.isVisibleTo(page)
    assert not page.server_state_check.isChecked()
    page.server_state_check.setChecked(True)
    assert dialog.save()
    saved = AppSettings.load(env.config).profile(custom.id)
    assert saved is not None
    assert saved.provider_profile().server_state is True

    again_dialog = env.dialog(qtbot)
    again = again_dialog.providers
    assert again.select(custom.id)
    assert again.server_state_check.isChecked()
    again.api_combo.setCurrentIndex(again.api_combo.findData("openai-chat"))
    assert not again.server_state_check.isVisibleTo(again)
    assert again_dialog.save()
    back = AppSettings.load(env.config).profile(custom.id)
    assert back is not None
    assert back.server_state is None
