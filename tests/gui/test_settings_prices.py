"""The settings dialog's Prices tab: user price overrides (SPEC §4), validated as typed, applied only on Save."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QLineEdit, QPushButton, QWidget
from pytestqt.qtbot import QtBot

from tiny_agent_core.paths import CONFIG_DIR_ENV
from tiny_agent_core.pricing import PRICE_TABLE_VERSION, PriceOverride
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import SETTINGS_FILE, AppSettings, ProfileConfig
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_gui.settings import ProviderCalls, SettingsDialog
from tiny_agent_gui.settings.prices_page import PriceRow


async def _never_fetch(*_: object) -> list[str]:
    raise AssertionError("the Prices tab makes no network calls")


async def _never_test(*_: object) -> str:
    raise AssertionError("the Prices tab makes no network calls")


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config folder that :meth:`AppSettings.load` uses by default (``$TINY_AGENT_CONFIG_DIR``)."""
    folder = tmp_path / "config"
    monkeypatch.setenv(CONFIG_DIR_ENV, str(folder))
    return folder


def open_dialog(qtbot: QtBot, settings: AppSettings, config: Path) -> SettingsDialog:
    dialog = SettingsDialog(
        settings, ToolSettings.load(config), KeyStore(environ={}), ProviderCalls(_never_fetch, _never_test)
    )
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=1000)  # keyboard focus and shortcuts need the active window
    dialog.show_tab(dialog.PRICES)
    return dialog


def save_button(dialog: SettingsDialog) -> QPushButton:
    return dialog.buttons.button(QDialogButtonBox.StandardButton.Save)


def fill(row: PriceRow, provider: str, model: str, *rates: str) -> None:
    row.provider.setCurrentIndex(row.provider.findData(provider))
    row.model.setText(model)
    for editor, text in zip((row.input, row.output, row.cache_read, row.cache_write), rates, strict=False):
        editor.setText(text)


def test_an_added_override_is_saved_with_exact_decimals(qtbot: QtBot, config: Path) -> None:
    settings = AppSettings.load()
    dialog = open_dialog(qtbot, settings, config)
    page = dialog.prices
    assert page.rows() == []
    qtbot.keyClick(dialog, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)  # "&Add override"
    qtbot.waitUntil(lambda: len(page.rows()) == 1, timeout=1000)  # a mnemonic clicks after a short animation
    (row,) = page.rows()
    assert QApplication.focusWidget() is row.provider
    assert row.provider.currentData() == "openai"
    assert row.model.text() == "*"
    row.model.setText("gpt-4.1")
    qtbot.keyClicks(row.input, "0.1")  # float(0.1) would not be exactly 1/10
    qtbot.keyClicks(row.output, " 8.000 ")
    qtbot.keyClicks(row.cache_read, "0.025")
    assert save_button(dialog).isEnabled()
    page.add_button.click()
    fill(page.rows()[1], "ollama", "*", "0", "0")
    with qtbot.waitSignal(dialog.settingsSaved, timeout=1000):
        save_button(dialog).click()

    expected = {
        ("openai", "gpt-4.1"): PriceOverride(Decimal("0.1"), Decimal("8.000"), Decimal("0.025"), None),
        ("ollama", "*"): PriceOverride(Decimal(0), Decimal(0)),
    }
    assert settings.price_overrides == expected
    price = settings.price_overrides[("openai", "gpt-4.1")]
    assert isinstance(price.input, Decimal)
    assert str(price.input) == "0.1"
    assert str(price.output) == "8.000"  # the text as typed, not a rounded binary float
    assert AppSettings.load().price_overrides == expected


@pytest.mark.parametrize("text", ["abc", "-1", "1e3", "nan", "Infinity", "1,5", "1_000", "0x10", "١", "1.2.3"])
def test_invalid_input_is_marked_and_blocks_save(qtbot: QtBot, config: Path, text: str) -> None:
    settings = AppSettings.load()
    dialog = open_dialog(qtbot, settings, config)
    page = dialog.prices
    page.add_button.click()
    row = page.rows()[0]
    fill(row, "groq", "*", "1", "2")
    assert page.problem() is None
    assert save_button(dialog).isEnabled()

    row.cache_write.setText(text)
    assert row.cache_write.property("invalid") is True
    assert "Invalid" in row.cache_write.toolTip()
    assert row.input.property("invalid") is False
    assert not save_button(dialog).isEnabled()
    assert "Row 1, cache write $/M" in page.problem_label.text()
    assert "Fix the prices first" in save_button(dialog).toolTip()
    dialog.show_tab(dialog.PROVIDERS)
    assert not dialog.save()  # Ctrl+S calls save() directly: still refused
    assert dialog.tabs.currentWidget() is page
    assert "Row 1, cache write $/M" in dialog.error_label.text()
    assert settings.price_overrides == {}
    assert not (config / SETTINGS_FILE).exists()

    row.cache_write.clear()  # an empty cache rate is allowed: the input rate applies
    assert row.cache_write.property("invalid") is False
    assert page.problem_label.text() == ""
    assert dialog.save()
    assert settings.price_overrides == {("groq", "*"): PriceOverride(Decimal(1), Decimal(2))}


def test_missing_rates_empty_models_and_repeated_keys_block_save(qtbot: QtBot, config: Path) -> None:
    dialog = open_dialog(qtbot, AppSettings.load(), config)
    page = dialog.prices
    page.add_button.click()
    row = page.rows()[0]
    assert not save_button(dialog).isEnabled()  # a new row has no input or output rate yet
    assert row.input.property("invalid") is True
    assert row.output.property("invalid") is True
    assert row.cache_read.property("invalid") is False
    assert "enter a price" in (page.problem() or "")
    assert "1 more problem marked" in page.problem_label.text()
    fill(row, "openai", "  ", "1", "2")
    assert row.model.property("invalid") is True
    row.model.setText("*")
    assert page.problem() is None

    page.add_button.click()
    fill(page.rows()[1], "openai", " * ", "3", "4")
    assert page.rows()[1].model.property("invalid") is True
    assert "row 1 already sets prices for openai *" in (page.problem() or "")
    assert not save_button(dialog).isEnabled()
    page.rows()[1].provider.setCurrentIndex(page.rows()[1].provider.findData("custom"))
    assert page.problem() is None
    assert save_button(dialog).isEnabled()


def test_cancel_discards(qtbot: QtBot, config: Path) -> None:
    original = {("openai", "*"): PriceOverride(Decimal("2.5"), Decimal(10))}
    settings = AppSettings.load()
    settings.price_overrides = dict(original)
    settings.save()
    dialog = open_dialog(qtbot, settings, config)
    page = dialog.prices
    page.rows()[0].input.setText("99")
    page.add_button.click()
    fill(page.rows()[1], "vllm", "*", "0", "0")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Cancel).click()
    assert not dialog.isVisible()
    assert settings.price_overrides == original
    assert AppSettings.load().price_overrides == original

    again = open_dialog(qtbot, settings, config)
    assert [row.input.text() for row in again.prices.rows()] == ["2.5"]


def test_existing_overrides_are_shown(qtbot: QtBot, config: Path) -> None:
    settings = AppSettings.load()
    settings.price_overrides = {
        ("openai", "gpt-4.1"): PriceOverride(Decimal("2"), Decimal("8"), Decimal("0.50"), None),
        ("lmstudio", "*"): PriceOverride(Decimal(0), Decimal(0), Decimal(0), Decimal(0)),
        ("acme-cloud", "claude"): PriceOverride(Decimal(3), Decimal(15), None, Decimal("3.75")),
    }
    dialog = open_dialog(qtbot, settings, config)
    page = dialog.prices
    shown = [
        (row.provider.currentData(), row.model.text(), *(e.text() for e in (row.input, row.output)))
        for row in page.rows()
    ]
    assert shown == [("acme-cloud", "claude", "3", "15"), ("lmstudio", "*", "0", "0"), ("openai", "gpt-4.1", "2", "8")]
    hand_edited, lmstudio, openai = page.rows()
    assert "not a preset" in hand_edited.provider.currentText()  # a hand-edited provider id is kept, not replaced
    assert (hand_edited.cache_read.text(), hand_edited.cache_write.text()) == ("", "3.75")
    assert (openai.cache_read.text(), openai.cache_write.text()) == ("0.50", "")
    assert lmstudio.cache_write.text() == "0"
    assert page.problem() is None
    assert save_button(dialog).isEnabled()
    assert PRICE_TABLE_VERSION in page.version_label.text()
    assert PRICE_TABLE_VERSION.startswith("genai-prices ")
    assert dialog.save()
    assert settings.price_overrides[("acme-cloud", "claude")].cache_write == Decimal("3.75")
    assert len(settings.price_overrides) == 3


def test_removing_rows(qtbot: QtBot, config: Path) -> None:
    settings = AppSettings.load()
    settings.price_overrides = {
        ("deepseek", "*"): PriceOverride(Decimal(1), Decimal(2)),
        ("groq", "*"): PriceOverride(Decimal(3), Decimal(4)),
        ("mistral", "*"): PriceOverride(Decimal(5), Decimal(6)),
    }
    dialog = open_dialog(qtbot, settings, config)
    page = dialog.prices
    page.rows()[1].output.setFocus()  # the row with the focus is the one Remove acts on
    assert page.selected_row() is page.rows()[1]
    assert [index.row() for index in page.table.selectionModel().selectedRows()] == [1]
    page.remove_button.click()
    assert [row.provider.currentData() for row in page.rows()] == ["deepseek", "mistral"]
    assert page.rows()[1].input.accessibleName().endswith("row 2")  # renumbered

    page.add_button.click()
    page.remove_button.click()  # a new row is current: removing it leaves the others
    assert len(page.rows()) == 2
    page.remove_button.click()
    page.remove_button.click()
    assert page.rows() == []
    assert not page.remove_button.isEnabled()
    assert dialog.save()
    assert settings.price_overrides == {}
    assert AppSettings.load().price_overrides == {}


def test_round_trip_through_the_settings_file(qtbot: QtBot, config: Path) -> None:
    dialog = open_dialog(qtbot, AppSettings.load(), config)
    page = dialog.prices
    page.add_button.click()
    fill(page.rows()[0], "custom", "qwen3-coder:30b", "0.000001", "123456789.123456789", "0", "")
    page.add_button.click()
    fill(page.rows()[1], "llamacpp", "*", "0", "0", "", "0")
    assert dialog.save()
    assert (config / SETTINGS_FILE).is_file()

    loaded = AppSettings.load()
    assert loaded.load_error is None
    assert loaded.price_overrides == {
        ("custom", "qwen3-coder:30b"): PriceOverride(
            Decimal("0.000001"), Decimal("123456789.123456789"), Decimal(0), None
        ),
        ("llamacpp", "*"): PriceOverride(Decimal(0), Decimal(0), None, Decimal(0)),
    }
    again = open_dialog(qtbot, loaded, config)
    row = again.prices.rows()[0]
    assert (row.provider.currentData(), row.model.text(), row.input.text(), row.output.text()) == (
        "custom",
        "qwen3-coder:30b",
        "0.000001",
        "123456789.123456789",
    )
    assert again.save()
    assert AppSettings.load().price_overrides == loaded.price_overrides


def test_keyboard_order_and_accessible_names(qtbot: QtBot, config: Path) -> None:
    settings = AppSettings.load()
    settings.price_overrides = {("openai", "*"): PriceOverride(Decimal(1), Decimal(2))}
    dialog = open_dialog(qtbot, settings, config)
    page = dialog.prices
    page.add_button.click()
    chain: list[QWidget] = []
    widget: QWidget | None = page.rows()[0].provider
    for _ in range(14):
        assert widget is not None
        chain.append(widget)
        widget = widget.nextInFocusChain()
        while widget is not None and (
            not widget.focusPolicy() & Qt.FocusPolicy.TabFocus or not widget.isVisibleTo(dialog)
        ):
            widget = widget.nextInFocusChain()
    expected = [editor for row in page.rows() for editor in row.editors()] + [page.add_button, page.remove_button]
    assert chain == expected
    names = [editor.accessibleName() for editor in page.rows()[1].editors()]
    assert names[:2] == ["Provider, row 2", "Model, row 2"]
    assert names[2] == "Input price in dollars per million tokens, row 2"
    assert all(names)
    controls = page.findChildren(QLineEdit) + page.findChildren(QPushButton)
    assert all(control.accessibleName() for control in controls)
    assert page.table.accessibleName() == "Price overrides"
    assert "&" in dialog.tabs.tabText(dialog.PRICES)


def test_rates_in_use_for_each_configured_model_and_the_way_to_set_one(qtbot: QtBot, config: Path) -> None:
    settings = AppSettings.load()
    gpt = ProfileConfig.from_preset("openai", "openai")
    settings.add_profile(replace(gpt, model="gpt-4o"))
    settings.add_profile(replace(ProfileConfig.custom("custom", "http://127.0.0.1:8089/v1"), model="smollm2"))
    settings.add_profile(replace(ProfileConfig.from_preset("openrouter", "openrouter"), model="nobody/secret"))
    settings.price_overrides = {("openai", "*"): PriceOverride(Decimal(1), Decimal(2))}
    dialog = open_dialog(qtbot, settings, config)
    page = dialog.prices
    shown = {f"{entry.provider} · {entry.model}": rates for entry, rates in page.rates()}
    assert shown["openai · gpt-4o"].source == "override"
    assert shown["custom · smollm2"].source == "local"  # a loopback base URL: no API charge
    assert shown["openrouter · nobody/secret"].source is None
    table = page.rates_table
    assert table.isVisibleTo(page)
    texts = {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}
    assert texts == {
        "openai · gpt-4o": "your override",
        "custom · smollm2": "local — no API charge",
        "openrouter · nobody/secret": "unknown — no price",
    }
    row = next(r for r in range(table.rowCount()) if table.item(r, 0).text() == "openai · gpt-4o")
    assert (table.item(row, 2).text(), table.item(row, 3).text(), table.item(row, 4).text()) == ("1", "2", "= input")
    [button] = page.set_price_buttons
    assert button.accessibleName() == "Set a price for openrouter nobody/secret"
    button.click()
    added = page.rows()[-1]
    assert (added.provider.currentData(), added.model.text()) == ("openrouter", "nobody/secret")
    assert QApplication.focusWidget() is added.input
    fill(added, "openrouter", "nobody/secret", "3", "4")
    assert {f"{e.provider} · {e.model}": r.source for e, r in page.rates()}["openrouter · nobody/secret"] == "override"
    assert page.set_price_buttons == []
    assert page.prefill("openrouter", "nobody/secret") is added  # an existing row is reused, not duplicated
    save_button(dialog).click()
    saved = AppSettings.load().price_overrides
    assert saved[("openrouter", "nobody/secret")] == PriceOverride(Decimal(3), Decimal(4))
