"""The settings dialog: providers and keys (keyring only), model fetch and connection test, tools, workspaces."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import keyring.backend
import pytest
from keyring.backends import fail
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QListWidget, QWidget
from pytestqt.qtbot import QtBot

from tests.core.test_secrets import MemoryKeyring, use_keyring
from tests.gui.waiting import emitted, until
from tiny_agent_core.errors import AuthenticationError
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.secrets import SERVICE, KeyStore
from tiny_agent_core.settings import SETTINGS_FILE, AppSettings, ProfileConfig
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_gui.settings import ProviderCalls, SettingsDialog

SECRET = "sk-dialog-secret-42"


class Calls:
    """Stub network calls that record what they were given."""

    def __init__(self, models: list[str] | None = None, error: Exception | None = None) -> None:
        self.models = models or ["gpt-4.1", "gpt-4.1-mini"]
        self.error = error
        self.seen: list[tuple[str, str | None, str | None]] = []

    async def fetch(self, profile: ProviderProfile, key: str | None) -> list[str]:
        self.seen.append((profile.base_url, key, None))
        await asyncio.sleep(0.01)
        if self.error:
            raise self.error
        return self.models

    async def test(self, profile: ProviderProfile, key: str | None, model: str | None) -> str:
        self.seen.append((profile.base_url, key, model))
        await asyncio.sleep(0.01)
        if self.error:
            raise self.error
        return f"Connected to {profile.name}."

    def provider_calls(self) -> ProviderCalls:
        return ProviderCalls(self.fetch, self.test)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    yield from use_keyring(backend)  # type: ignore[misc]


@pytest.fixture
def no_keyring() -> Iterator[keyring.backend.KeyringBackend]:
    yield from use_keyring(fail.Keyring())


class Env:
    """A config folder, its settings, tool settings and a chooser that returns queued folders."""

    def __init__(self, root: Path) -> None:
        self.config = root / "config"
        self.settings = AppSettings.load(self.config)
        self.tools = ToolSettings.load(self.config)
        self.folders: list[str | None] = []
        self.calls = Calls()

    def chooser(self, parent: QWidget, title: str) -> str | None:
        return self.folders.pop(0)

    def dialog(self, qtbot: QtBot, key_store: KeyStore | None = None) -> SettingsDialog:
        dialog = SettingsDialog(
            self.settings,
            self.tools,
            key_store or KeyStore(environ={}),
            self.calls.provider_calls(),
            chooser=self.chooser,
        )
        qtbot.addWidget(dialog)
        dialog.show()
        return dialog


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


async def test_add_a_provider_with_key_model_and_workspace(
    qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring, tmp_path: Path
) -> None:
    dialog = env.dialog(qtbot)
    page = dialog.providers
    assert "system keyring" in page.keyring_label.text()
    page.preset_combo.setCurrentIndex(page.preset_combo.findData("openai"))
    page.add_button.click()
    page.key_edit.setText(f" {SECRET} ")
    assert page.key_edit.echoMode() == QLineEdit.EchoMode.Password
    assert "will be saved in the system keyring" in page.key_status.text()
    page.model_combo.setCurrentText("gpt-4.1")
    env.folders.append(str(tmp_path / "project"))
    dialog.workspaces.add_button.click()
    async with emitted(dialog.settingsSaved):
        dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    assert not dialog.isVisible()

    assert memory_keyring.secrets == {(SERVICE, "openai"): SECRET}
    saved = AppSettings.load(env.config)
    assert saved.load_error is None
    assert saved.profiles == [ProfileConfig("openai", "openai", "OpenAI", model="gpt-4.1", key_env="OPENAI_API_KEY")]
    assert saved.active_profile == "openai"
    assert saved.workspaces == [str(tmp_path / "project")]
    for path in env.config.rglob("*"):
        assert SECRET not in path.read_text(encoding="utf-8")

    again = env.dialog(qtbot)
    assert again.providers.key_edit.text() == ""  # a stored key is never shown back
    assert again.providers.key_status.text() == "Looking in the system keyring…"  # asked in a worker thread
    for _ in range(500):  # an asyncio wait: the answer comes back through the event loop
        if again.providers.key_status.text() != "Looking in the system keyring…":
            break
        await asyncio.sleep(0.01)
    assert again.providers.key_status.text() == "A key is stored in the system keyring."
    assert again.providers.key_edit.placeholderText() == "Type to replace the stored key"
    again.providers.forget_button.click()
    assert again.save()
    await again.wait_saved()
    assert memory_keyring.secrets == {}


class SlowKeyStore(KeyStore):
    """A keyring that records the thread of every write and holds each until released (an unlock prompt)."""

    def __init__(self) -> None:
        super().__init__(environ={})
        self.threads: list[threading.Thread] = []
        self.release = threading.Event()

    def set(self, profile_id: str, key: str) -> None:
        self.threads.append(threading.current_thread())
        self.release.wait(10)
        super().set(profile_id, key)


async def test_keys_are_written_off_the_gui_thread_and_the_dialog_waits_for_them(
    qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring
) -> None:
    keys = SlowKeyStore()
    dialog = env.dialog(qtbot, keys)
    dialog.providers.add_profile("openrouter")
    dialog.providers.key_edit.setText(SECRET)
    dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    await until(lambda: keys.threads)
    assert threading.main_thread() not in keys.threads
    assert dialog.error_label.text() == "Saving the keys in the system keyring…"
    assert not dialog.buttons.isEnabled()
    assert not dialog.tabs.isEnabled()  # an edit made now would not be saved
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)  # nothing can stop a keyring write: the dialog stays
    assert dialog.isVisible()
    assert dialog.save()  # Ctrl+S again: the same save goes on
    assert len(keys.threads) == 1
    async with emitted(dialog.settingsSaved):
        keys.release.set()
    assert not dialog.isVisible()
    assert memory_keyring.secrets == {(SERVICE, "openrouter"): SECRET}


class BrokenKeyStore(KeyStore):
    """A keyring backend that fails in a way no one foresaw."""

    def set(self, profile_id: str, key: str) -> None:
        raise RuntimeError("the D-Bus connection went away")


async def test_an_unforeseen_keyring_failure_is_shown_and_the_dialog_stays_usable(
    qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring, caplog: pytest.LogCaptureFixture
) -> None:
    dialog = env.dialog(qtbot, BrokenKeyStore(environ={}))
    dialog.providers.add_profile("openrouter")
    dialog.providers.key_edit.setText(SECRET)
    async with emitted(dialog.settingsSaved):  # the settings file was written: the window re-reads it
        assert dialog.save()
        await dialog.wait_saved()
    expected = "The settings were saved, but an API key was not: the D-Bus connection went away"
    assert dialog.error_label.text() == expected
    assert dialog.isVisible()
    assert dialog.buttons.isEnabled()
    assert dialog.tabs.isEnabled()
    assert "keyring write failed" in caplog.text
    assert SECRET not in caplog.text


def test_cancel_changes_nothing(qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring) -> None:
    dialog = env.dialog(qtbot)
    dialog.providers.add_profile("groq")
    dialog.providers.key_edit.setText(SECRET)
    dialog.reject()
    assert memory_keyring.secrets == {}
    assert env.settings.profiles == []
    assert not (env.config / SETTINGS_FILE).exists()


async def test_profiles_can_be_renamed_removed_and_made_active(
    qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring
) -> None:
    KeyStore().set("ollama", "unused")
    env.settings.add_profile(ProfileConfig.from_preset("ollama", "ollama"))
    env.settings.add_profile(ProfileConfig.from_preset("openrouter", "openrouter"))
    dialog = env.dialog(qtbot)
    page = dialog.providers
    assert page.list.count() == 2
    assert "(used for new sessions)" in page.list.item(0).text()
    page.list.setCurrentRow(1)
    page.name_edit.setText("OpenRouter (work)")
    page.active_button.click()
    assert page.list.item(1).text() == "OpenRouter (work) (used for new sessions)"
    page.list.setCurrentRow(0)
    page.remove_button.click()
    assert dialog.save()
    await dialog.wait_saved()
    assert [p.name for p in env.settings.profiles] == ["OpenRouter (work)"]
    assert env.settings.active_profile == "openrouter"
    assert memory_keyring.secrets == {}  # the removed profile's key went with it


def test_a_custom_profile_needs_a_base_url(qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring) -> None:
    dialog = env.dialog(qtbot)
    profile = dialog.providers.add_profile("custom")
    assert profile.id == "custom"
    assert not dialog.save()
    assert "needs a base URL" in dialog.error_label.text()
    assert dialog.isVisible()
    dialog.providers.url_edit.setText("http://gpu-box:8000/v1/chat/completions")
    dialog.providers.env_edit.setText("BAD NAME")
    assert not dialog.save()
    assert "not an environment variable name" in dialog.error_label.text()
    dialog.providers.env_edit.setText("BOX_KEY")
    assert dialog.save()
    assert env.settings.profiles[0].base_url == "http://gpu-box:8000/v1"


def test_without_a_keyring_the_dialog_says_so_and_offers_the_environment(
    qtbot: QtBot, env: Env, no_keyring: keyring.backend.KeyringBackend
) -> None:
    env.settings.add_profile(ProfileConfig.from_preset("openai", "openai"))
    dialog = env.dialog(qtbot, KeyStore(environ={"OPENAI_API_KEY": "sk-env"}))
    page = dialog.providers
    assert "No system keyring" in page.keyring_label.text()
    assert not page.key_edit.isEnabled()
    text = page.key_status.text()
    assert "OPENAI_API_KEY" in text
    assert "for that run only" in text
    assert "is set" in text
    assert dialog.save()  # nothing to write to a keyring


async def test_fetch_models_uses_the_typed_key_and_fills_the_list(
    qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring
) -> None:
    dialog = env.dialog(qtbot)
    page = dialog.providers
    page.add_profile("openai")
    page.key_edit.setText(SECRET)
    await page.fetch_models()
    assert env.calls.seen == [("https://api.openai.com/v1", SECRET, None)]
    assert [page.model_combo.itemText(i) for i in range(page.model_combo.count())] == ["gpt-4.1", "gpt-4.1-mini"]
    assert page.test_status.text() == "2 models; gpt-4.1 selected (choose another above)."
    assert page.model_combo.currentText() == "gpt-4.1"  # a profile without a model gets the first listed
    assert memory_keyring.secrets == {}  # typing a key stores nothing until Save


async def test_the_buttons_run_without_blocking_and_show_results(
    qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring
) -> None:
    env.settings.add_profile(ProfileConfig("vllm", "vllm", "vLLM", model="qwen3"))
    dialog = env.dialog(qtbot)
    page = dialog.providers
    page.test_button.click()
    await asyncio.sleep(0)  # the click started a task; its first step runs on the next loop turn
    assert not page.test_button.isEnabled()
    assert page.test_status.text() == "Testing…"
    await until(page.test_button.isEnabled)
    assert page.test_status.text() == "✓ Connected to vLLM."
    assert env.calls.seen == [("http://localhost:8000/v1", None, "qwen3")]
    page.fetch_button.click()
    await until(page.fetch_button.isEnabled)
    assert page.model_combo.currentText() == "qwen3"  # the chosen model is kept


async def test_failures_show_the_typed_error(qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring) -> None:
    env.calls.error = AuthenticationError("The API key was rejected (HTTP 401).", status=401)
    env.settings.add_profile(ProfileConfig.from_preset("groq", "groq"))
    dialog = env.dialog(qtbot)
    await dialog.providers.test_connection()
    assert dialog.providers.test_status.text() == "Failed: The API key was rejected (HTTP 401)."
    await dialog.providers.fetch_models()
    assert "Could not fetch models: The API key was rejected" in dialog.providers.test_status.text()
    assert dialog.providers.test_button.isEnabled()


async def test_closing_cancels_a_running_test(qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring) -> None:
    main_window = QWidget()  # closing the last window would quit the app and stop the loop
    qtbot.addWidget(main_window)
    main_window.show()
    env.settings.add_profile(ProfileConfig.from_preset("ollama", "ollama"))
    dialog = env.dialog(qtbot)
    dialog.providers.test_button.click()
    tasks = set(dialog.providers._tasks)
    assert tasks
    dialog.reject()
    await asyncio.sleep(0.02)
    assert all(task.cancelled() for task in tasks)


def test_tool_permissions_are_visible_and_revocable(qtbot: QtBot, env: Env, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env.settings.add_workspace(project)
    env.tools.allow_always("bash")
    env.tools.allow_always("write")
    dialog = env.dialog(qtbot)
    page = dialog.tools
    assert [page.always_list.item(i).text() for i in range(page.always_list.count())] == ["bash", "write"]
    page.always_list.setCurrentRow(0)
    page.revoke_button.click()
    assert page.always_allowed() == ["write"]
    assert page.workspace_combo.currentData() == str(project.resolve())
    env.folders.append(str(tmp_path))
    page.add_root_button.click()
    assert page.roots(str(project)) == [str(tmp_path.resolve())]
    assert dialog.save()
    reloaded = ToolSettings.load(env.config)
    assert reloaded.always_allowed() == {"write"}
    assert reloaded.allowed_roots(project) == (tmp_path.resolve(),)

    again = env.dialog(qtbot)
    again.tools.revoke_all()
    again.tools.remove_root()
    assert again.save()
    reloaded.reload()
    assert (reloaded.always_allowed(), reloaded.allowed_roots(project)) == (frozenset(), ())


def test_new_workspaces_are_offered_for_extra_folders(qtbot: QtBot, env: Env, tmp_path: Path) -> None:
    dialog = env.dialog(qtbot)
    assert dialog.tools.workspace_combo.count() == 0
    assert not dialog.tools.add_root_button.isEnabled()
    env.folders.extend([str(tmp_path), None])
    dialog.workspaces.add_button.click()
    dialog.workspaces.add_button.click()  # cancelled: nothing added
    assert dialog.workspaces.workspaces() == [str(tmp_path)]
    assert dialog.tools.workspace_combo.currentData() == str(tmp_path.resolve())
    dialog.workspaces.remove_button.click()
    assert dialog.workspaces.workspaces() == []


def test_a_broken_settings_file_is_reported(qtbot: QtBot, env: Env) -> None:
    env.config.mkdir(parents=True)
    (env.config / SETTINGS_FILE).write_text(json.dumps({"version": 99}))
    env.settings = AppSettings.load(env.config)
    dialog = env.dialog(qtbot)
    assert "newer version" in dialog.error_label.text()
    assert not dialog.save()
    assert "newer version" in dialog.error_label.text()


def test_every_control_has_an_accessible_name_and_tabs_have_mnemonics(
    qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring
) -> None:
    env.settings.add_profile(ProfileConfig.from_preset("openai", "openai"))
    dialog = env.dialog(qtbot)
    controls = [
        widget
        for kind in (QAbstractButton, QLineEdit, QComboBox, QListWidget)
        for widget in dialog.findChildren(kind)
        if not isinstance(widget.parent(), QComboBox | QAbstractSpinBox)  # a combo's or spin box's own line edit
    ]
    assert controls
    unnamed = [w for w in controls if not w.accessibleName() and type(w).__name__ != "QTabBar"]
    assert unnamed == []
    assert all("&" in dialog.tabs.tabText(i) for i in range(dialog.tabs.count()))


async def test_the_real_calls_list_models_over_http() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.headers.get("Authorization") != f"Bearer {SECRET}":
            return httpx.Response(401, json={"error": {"message": "bad key"}})
        return httpx.Response(200, json={"data": [{"id": "m-b"}, {"id": "m-a"}]})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        calls = ProviderCalls.over_http(client)
        profile = ProfileConfig.from_preset("openai", "openai").provider_profile()
        assert await calls.fetch_models(profile, SECRET) == ["m-a", "m-b"]
        message = await calls.test_connection(profile, SECRET, "gpt-x")
        assert message == "Connected to OpenAI: 2 models available. The model 'gpt-x' is not among them."
        with pytest.raises(AuthenticationError):
            await calls.test_connection(profile, "wrong", None)


def test_network_per_workspace_and_the_step_limit_are_saved(qtbot: QtBot, env: Env, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env.settings.add_workspace(project)
    dialog = env.dialog(qtbot)
    page = dialog.tools
    assert page.network_check.isChecked()
    assert page.steps_spin.value() == 200
    if not page.network_check.isEnabled():
        pytest.skip(f"no sandbox here, so the network cannot be cut: {page.sandbox_label.text()}")
    page.network_check.setChecked(False)
    page.steps_spin.setValue(40)
    assert dialog.save()
    reloaded = AppSettings.load(env.config)
    assert not reloaded.network_allowed(project)
    assert reloaded.max_steps == 40


def test_the_tools_page_says_when_commands_are_not_sandboxed(qtbot: QtBot, tmp_path: Path) -> None:
    from tiny_agent_core.tools.sandbox import SandboxStatus
    from tiny_agent_gui.settings.tools_page import ToolsPage

    missing = SandboxStatus(False, "bubblewrap (bwrap) is not installed")
    page = ToolsPage(ToolSettings.load(tmp_path), lambda: [str(tmp_path)], lambda *_: None, sandbox=lambda: missing)
    qtbot.addWidget(page)
    assert "NOT sandboxed: bubblewrap (bwrap) is not installed" in page.sandbox_label.text()
    assert not page.network_check.isEnabled()


def test_scoped_rules_are_listed_and_revocable(qtbot: QtBot, env: Env, tmp_path: Path) -> None:
    from tiny_agent_core.tools.scopes import make_rule

    prefix = make_rule("bash", "prefix", "git status")
    glob = make_rule("edit", "glob", "src/**", str(tmp_path))
    env.tools.allow_always("bg")
    env.tools.add_rule(prefix)
    env.tools.add_rule(glob)
    dialog = env.dialog(qtbot)
    page = dialog.tools
    shown = [page.always_list.item(i).text() for i in range(page.always_list.count())]
    assert shown == ["bg", 'bash: commands starting with "git status"', f"edit: paths matching src/** in {tmp_path}"]
    assert page.always_list.accessibleName() == "Always allowed tools, command prefixes and paths"
    page.always_list.setCurrentRow(1)
    page.revoke_button.click()
    assert page.allow_rules() == [glob]
    assert page.always_list.currentRow() == 1  # the next permission is selected, ready for another Revoke
    assert page.always_allowed() == ["bg"]
    page.apply()
    assert ToolSettings.load(env.config).allow_rules() == (glob,)
    page.revoke_all()
    assert not page.revoke_button.isEnabled()
    page.apply()
    reloaded = ToolSettings.load(env.config)
    assert (reloaded.always_allowed(), reloaded.allow_rules()) == (frozenset(), ())


def test_it_opens_on_one_provider_with_the_key_focused(qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring) -> None:
    env.settings.add_profile(ProfileConfig.from_preset("ollama", "ollama"))
    env.settings.add_profile(ProfileConfig.from_preset("openrouter", "openrouter"))
    dialog = env.dialog(qtbot)
    dialog.show()
    dialog.show_provider("openrouter")
    qtbot.waitUntil(lambda: dialog.providers.key_edit.hasFocus(), timeout=2000)
    current = dialog.providers.current()
    assert current is not None
    assert current.id == "openrouter"
    assert dialog.tabs.currentWidget() is dialog.providers


async def test_a_new_preset_gets_the_key_focus_and_a_listed_model(
    qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring
) -> None:
    env.calls.models = ["qwen3:8b"]
    dialog = env.dialog(qtbot)
    dialog.show()
    page = dialog.providers
    assert page.empty_hint.isVisible()
    assert "Choose a provider type above" in page.empty_hint.text()
    dialog.add_provider("openrouter")
    await until(page.key_edit.hasFocus)
    assert not page.empty_hint.isVisible()
    assert env.calls.seen == []  # a cloud provider waits for its key
    page.key_edit.setText(SECRET)
    page.key_edit.editingFinished.emit()
    await until(lambda: page.model_combo.currentText() == "qwen3:8b")
    assert page.test_status.text() == "1 model; qwen3:8b selected (choose another above)."
    page.add_profile("ollama")  # a local server needs no key: its models are listed at once
    await until(lambda: len(env.calls.seen) == 2)
    await until(lambda: page.model_combo.currentText() == "qwen3:8b")
    assert dialog.save()
    await dialog.wait_saved()
    assert [(p.id, p.model) for p in env.settings.profiles] == [("openrouter", "qwen3:8b"), ("ollama", "qwen3:8b")]
    assert memory_keyring.secrets == {(SERVICE, "openrouter"): SECRET}


def test_every_stop_on_the_providers_tab_has_a_name(qtbot: QtBot, env: Env, memory_keyring: MemoryKeyring) -> None:
    env.settings.add_profile(ProfileConfig.from_preset("ollama", "ollama"))
    dialog = env.dialog(qtbot)
    dialog.show()
    start = dialog.providers.preset_combo
    widget = start.nextInFocusChain()
    unnamed = []
    while widget is not start:
        focusable = widget.isVisible() and widget.focusPolicy() & Qt.FocusPolicy.TabFocus
        if focusable and dialog.providers.isAncestorOf(widget):
            interface = QAccessible.queryAccessibleInterface(widget)
            if interface is None or not interface.text(QAccessible.Text.Name).strip():
                unnamed.append(type(widget).__name__)
        widget = widget.nextInFocusChain()
    assert unnamed == []


def test_it_opens_at_a_price_for_a_provider_and_model(qtbot: QtBot, env: Env) -> None:
    dialog = env.dialog(qtbot)
    dialog.show()
    dialog.price_for("ollama", "qwen3:8b")
    assert dialog.tabs.currentWidget() is dialog.prices
    row = dialog.prices.rows()[-1]
    assert (row.provider.currentData(), row.model.text()) == ("ollama", "qwen3:8b")
    qtbot.waitUntil(row.input.hasFocus, timeout=2000)
    count = len(dialog.prices.rows())
    dialog.price_for("ollama", "qwen3:8b")  # the same row again, not a second one
    assert len(dialog.prices.rows()) == count
