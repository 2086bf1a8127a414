"""The Providers tab: the user's provider profiles, each with base URL, model, API key and a connection test.

Edits are staged here and applied by the dialog's Save: profiles go to the settings file, typed keys only to the
keyring (:class:`~tiny_agent_core.secrets.KeyStore`), never to a file. Fetching models and testing the connection are
coroutines (:meth:`ProvidersPage.fetch_models`, :meth:`ProvidersPage.test_connection`); the buttons start them as
tasks on the running (qasync) loop.

Each profile speaks one API kind (:data:`~tiny_agent_core.providers.api_kinds.API_KINDS`: OpenAI Chat
Completions, Anthropic Messages, OpenAI Responses): a preset's is fixed and shown, a custom profile's is chosen.
An OpenAI Chat Completions profile also has its server's dialect (send ``tool_choice: "auto"``, stream tool turns,
``null`` content allowed in tool-call messages: each "Provider default", "Yes" or "No"), shown only for that kind.
Every profile has the model's context length (blank: ask the server). A dialect the agent learned from a server's
refusal is stored here too, so it shows as chosen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import replace
from functools import partial
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QIntValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.errors import SecretStoreError, SettingsError, TinyAgentError
from tiny_agent_core.providers.api_kinds import API_KINDS, API_LABELS, DEFAULT_API, keeps_server_state
from tiny_agent_core.providers.openai_dialect import Dialect
from tiny_agent_core.providers.profiles import PRESETS, normalize_base_url
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import CUSTOM, AppSettings, ProfileConfig
from tiny_agent_gui.settings.calls import ProviderCalls
from tiny_agent_gui.status_bar import plural

__all__ = ["PRESET_ORDER", "ProvidersPage"]

PRESET_ORDER = (
    "openai",
    "openai-responses",
    "anthropic",
    "openrouter",
    "ollama",
    "lmstudio",
    "vllm",
    "llamacpp",
    "deepseek",
    "groq",
    "mistral",
    "together",
)
"""The presets in the order the "add" list offers them (custom base URL comes last)."""

_ID = Qt.ItemDataRole.UserRole

DIALECT_FIELDS = (
    ("tool_choice_auto", 'Send tool_&choice "auto":', "Send tool_choice auto with the tools"),
    ("stream_tools", "Stream too&l turns:", "Stream requests that offer tools"),
    ("null_content", "Null content allowe&d:", "Server accepts null content in tool-call messages"),
)
"""``(ProfileConfig field, label, accessible name)`` of each dialect switch, in form order."""

MAX_CONTEXT = 100_000_000
"""The largest context length the form accepts, in tokens."""


class ProvidersPage(QWidget):
    """Staged edits of the provider profiles and their keys."""

    def __init__(self, settings: AppSettings, key_store: KeyStore, calls: ProviderCalls) -> None:
        super().__init__()
        self._settings = settings
        self._key_store = key_store
        self._calls = calls
        self._profiles = list(settings.profiles)
        active = settings.active()
        self._active = active.id if active else None
        self._keys: dict[str, str] = {}
        """Keys typed in this dialog, by profile id, to store on save."""
        self._forget: set[str] = set()
        """Profile ids whose stored key is deleted on save."""
        self._models: dict[str, list[str]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loading = False
        self._build()
        self._refresh_list(self._active)

    # -- construction --------------------------------------------------------------------------------------

    def _build(self) -> None:
        status = self._key_store.status()
        self.keyring_label = QLabel(
            f"API keys are saved only in the system keyring ({status.backend}), never in a file."
            if status.available
            else f"{status.reason} A key can still come from an environment variable, for one run."
        )
        self.keyring_label.setWordWrap(True)
        self.keyring_label.setAccessibleName("Keyring status")

        self.list = QListWidget()
        self.list.setAccessibleName("Configured providers")
        list_label = QLabel("Confi&gured providers:")
        list_label.setBuddy(self.list)
        self.preset_combo = QComboBox()
        self.preset_combo.setAccessibleName("Provider type to add")
        for preset_id in PRESET_ORDER:
            self.preset_combo.addItem(PRESETS[preset_id].name, preset_id)
        self.preset_combo.addItem("Custom (any base URL)", CUSTOM)
        preset_label = QLabel("Pro&vider type:")
        preset_label.setBuddy(self.preset_combo)
        self.add_button = QPushButton("&Add")
        self.add_button.setAccessibleName("Add provider")
        self.remove_button = QPushButton("&Remove")
        self.remove_button.setAccessibleName("Remove provider")
        self.active_button = QPushButton("&Use for new sessions")
        self.active_button.setAccessibleName("Use for new sessions")

        self.empty_hint = QLabel(
            "No provider yet. Choose a provider type above and press Add: a server on this computer (Ollama, "
            "LM Studio, llama.cpp, vLLM) needs no key; for a cloud provider paste its API key, then pick a model."
        )
        self.empty_hint.setWordWrap(True)
        self.empty_hint.setAccessibleName("How to add a provider")

        left = QVBoxLayout()
        left.addWidget(preset_label)
        adding = QHBoxLayout()
        adding.addWidget(self.preset_combo, 1)
        adding.addWidget(self.add_button)
        left.addLayout(adding)
        left.addWidget(list_label)
        left.addWidget(self.list, 1)
        left.addWidget(self.empty_hint)
        actions = QHBoxLayout()
        actions.addWidget(self.remove_button)
        actions.addWidget(self.active_button)
        left.addLayout(actions)

        self.form = QGroupBox("Provider")
        self.name_edit = QLineEdit()
        self.url_edit = QLineEdit()
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)
        self.model_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.model_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model_combo.setMinimumContentsLength(20)
        self.fetch_button = QPushButton("&Fetch models")
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.forget_button = QPushButton("Forget ke&y")
        self.forget_button.setToolTip("Delete the key stored in the system keyring for this provider (on Save)")
        self.key_status = QLabel()
        self.key_status.setWordWrap(True)
        self.env_edit = QLineEdit()
        self.env_edit.setPlaceholderText("e.g. MY_PROVIDER_API_KEY")
        self.api_combo = QComboBox()
        """The API kind: data the kind's name; chosen for a custom profile, shown (fixed) for a preset."""
        for kind in API_KINDS:
            self.api_combo.addItem(API_LABELS.get(kind, kind), kind)
        self.api_combo.setToolTip(
            "The API the server speaks. Most servers (Ollama, LM Studio, vLLM, llama.cpp, OpenRouter…) speak "
            "OpenAI Chat Completions."
        )
        self.server_state_check = QCheckBox("Let the server keep the conversation")
        self.server_state_check.setToolTip(
            "Each request sends only what is new since the previous answer (previous_response_id; the provider stores "
            "the conversation). The session file still holds everything; a conversation the server lost is sent "
            "whole again."
        )
        self.dialect_combos: dict[str, QComboBox] = {}
        """One per dialect field: data ``None`` (the provider's default), ``True`` or ``False``."""
        for field_name, _label, _name in DIALECT_FIELDS:
            combo = QComboBox()
            combo.addItem("Provider default", None)
            combo.addItem("Yes", True)
            combo.addItem("No", False)
            self.dialect_combos[field_name] = combo
        self.dialect_combos["tool_choice_auto"].setToolTip(
            'Send tool_choice "auto" with the tools (llama-cpp-python leaves the tools out of the prompt without it).'
        )
        self.dialect_combos["stream_tools"].setToolTip(
            "No: requests that offer tools are sent without streaming (some local servers cannot stream them)."
        )
        self.dialect_combos["null_content"].setToolTip(
            'No: a tool-call message\'s empty content is sent as "" (some local servers refuse null).'
        )
        self.context_edit = QLineEdit()
        self.context_edit.setValidator(QIntValidator(1, MAX_CONTEXT, self.context_edit))
        self.context_edit.setPlaceholderText("blank: ask the server")
        self.context_edit.setToolTip(
            "The model's context window in tokens (e.g. 4096). Leave blank to ask the server (llama.cpp, Ollama, "
            "LM Studio and vLLM say it)."
        )
        self.test_button = QPushButton("&Test connection")
        self.test_status = QLabel()
        self.test_status.setWordWrap(True)
        self.test_status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        for widget, name in (
            (self.name_edit, "Provider name"),
            (self.url_edit, "Base URL"),
            (self.model_combo, "Model"),
            (self.fetch_button, "Fetch models"),
            (self.key_edit, "API key"),
            (self.forget_button, "Forget stored key"),
            (self.key_status, "API key status"),
            (self.env_edit, "Key environment variable"),
            (self.api_combo, "API kind"),
            (self.server_state_check, "Let the server keep the conversation"),
            *((self.dialect_combos[field_name], name) for field_name, _label, name in DIALECT_FIELDS),
            (self.context_edit, "Context length in tokens"),
            (self.test_button, "Test connection"),
            (self.test_status, "Connection test result"),
        ):
            widget.setAccessibleName(name)
        model_editor = self.model_combo.lineEdit()
        if model_editor is not None:  # the editable combo's text field is what a screen reader lands on
            model_editor.setAccessibleName("Model")
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_combo, 1)
        model_row.addWidget(self.fetch_button)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_edit, 1)
        key_row.addWidget(self.forget_button)
        form = QFormLayout(self.form)
        rows: tuple[tuple[str, QWidget | QHBoxLayout, QWidget], ...] = (
            ("&Name:", self.name_edit, self.name_edit),
            ("&Base URL:", self.url_edit, self.url_edit),
            ("&Model:", model_row, self.model_combo),
            ("API &key:", key_row, self.key_edit),
            ("", self.key_status, self.key_status),
            ("&Environment variable:", self.env_edit, self.env_edit),
            ("W&hich API:", self.api_combo, self.api_combo),
            ("Server state:", self.server_state_check, self.server_state_check),
            *((label, self.dialect_combos[name], self.dialect_combos[name]) for name, label, _n in DIALECT_FIELDS),
            ("Conte&xt length:", self.context_edit, self.context_edit),
        )
        for text, field, buddy in rows:
            label = QLabel(text)
            label.setBuddy(buddy)
            form.addRow(label, field)
        form.addRow(self.test_button, self.test_status)
        self._form_layout = form

        columns = QHBoxLayout()
        columns.addLayout(left, 2)
        columns.addWidget(self.form, 3)
        layout = QVBoxLayout(self)
        layout.addWidget(self.keyring_label)
        layout.addLayout(columns, 1)

        self.list.currentItemChanged.connect(lambda *_: self._show_current())
        self.add_button.clicked.connect(lambda: self.add_profile(self.preset_combo.currentData()))
        self.remove_button.clicked.connect(self.remove_current)
        self.active_button.clicked.connect(self.make_current_active)
        for edit in (self.name_edit, self.url_edit, self.env_edit, self.context_edit):
            edit.textChanged.connect(self._form_changed)
        for combo in (self.api_combo, *self.dialect_combos.values()):
            combo.currentIndexChanged.connect(self._form_changed)
        self.server_state_check.toggled.connect(self._form_changed)
        self.model_combo.currentTextChanged.connect(self._form_changed)
        self.key_edit.textChanged.connect(self._key_typed)
        self.key_edit.editingFinished.connect(self._key_entered)
        self.forget_button.clicked.connect(self.forget_key)
        self.fetch_button.clicked.connect(lambda: self._spawn(self.fetch_models()))
        self.test_button.clicked.connect(lambda: self._spawn(self.test_connection()))

    # -- staged state --------------------------------------------------------------------------------------

    def profiles(self) -> list[ProfileConfig]:
        """The profiles as edited."""
        return list(self._profiles)

    def active_id(self) -> str | None:
        """The profile chosen for new sessions."""
        return self._active

    def current(self) -> ProfileConfig | None:
        """The profile shown in the form."""
        item = self.list.currentItem()
        profile_id = item.data(_ID) if item is not None else None
        return next((profile for profile in self._profiles if profile.id == profile_id), None)

    def add_profile(self, preset_id: str) -> ProfileConfig:
        """Add a profile for a preset id, or :data:`CUSTOM` (its base URL is then to be typed), and show it."""
        taken = AppSettings(profiles=self._profiles)
        if preset_id == CUSTOM:
            profile = ProfileConfig(taken.new_profile_id(CUSTOM), CUSTOM, "Custom server")
        else:
            profile = ProfileConfig.from_preset(preset_id, taken.new_profile_id(preset_id))
        self._profiles.append(profile)
        if self._active is None:
            self._active = profile.id
        self._refresh_list(profile.id)
        (self.url_edit if profile.is_custom else self.model_combo).setFocus()
        preset = PRESETS.get(preset_id)
        if preset is not None and not preset.key_required:
            self._spawn(self.fetch_models())  # a local server needs no key: list its models right away
        return profile

    def select(self, profile_id: str) -> bool:
        """Show the profile ``profile_id``; whether it exists."""
        for row in range(self.list.count()):
            item = self.list.item(row)
            if item.data(_ID) == profile_id:
                self.list.setCurrentItem(item)
                return True
        return False

    def focus_key(self) -> None:
        """Put the cursor in the API key field (or, without a keyring, the environment variable field)."""
        (self.key_edit if self.key_edit.isEnabled() else self.env_edit).setFocus()

    def remove_current(self) -> None:
        """Remove the shown profile; its stored key is deleted on save."""
        profile = self.current()
        if profile is None:
            return
        self._profiles.remove(profile)
        self._keys.pop(profile.id, None)
        self._forget.add(profile.id)
        if self._active == profile.id:
            self._active = self._profiles[0].id if self._profiles else None
        self._refresh_list(self._profiles[0].id if self._profiles else None)

    def make_current_active(self) -> None:
        """Use the shown profile for new sessions."""
        profile = self.current()
        if profile is not None:
            self._active = profile.id
            self._refresh_list(profile.id)

    def forget_key(self) -> None:
        """Delete the shown profile's stored key on save (and drop a key typed here)."""
        profile = self.current()
        if profile is None:
            return
        self._keys.pop(profile.id, None)
        self._forget.add(profile.id)
        self._loading = True
        self.key_edit.clear()
        self._loading = False
        self._show_key_status(profile)

    def key_writes(self) -> list[Callable[[], None]]:
        """The staged key changes as keyring calls, in order, for a worker thread (the keyring may wait on D-Bus or
        on an unlock prompt). Each raises :class:`SecretStoreError` subclasses; :meth:`keys_written` after all."""
        store = self._key_store
        forgotten = [partial(store.discard, profile_id) for profile_id in sorted(self._forget - set(self._keys))]
        return [*forgotten, *(partial(store.set, profile_id, key) for profile_id, key in sorted(self._keys.items()))]

    def keys_written(self) -> None:
        """Every write of :meth:`key_writes` succeeded: nothing is staged any more."""
        self._keys.clear()
        self._forget.clear()

    def cancel_tasks(self) -> None:
        """Stop running fetches and tests (the dialog is closing)."""
        for task in list(self._tasks):
            task.cancel()

    # -- network -------------------------------------------------------------------------------------------

    async def fetch_models(self) -> None:
        """Fill the model list of the shown profile from its ``/models`` endpoint."""
        profile = self.current()
        if profile is None:
            return
        self.fetch_button.setEnabled(False)
        self.test_status.setText("Fetching models…")
        try:
            models = await self._calls.fetch_models(profile.provider_profile(), await self._key_for(profile))
        except TinyAgentError as error:
            self.test_status.setText(f"Could not fetch models: {error}")
            return
        finally:
            self.fetch_button.setEnabled(True)
        self._models[profile.id] = models
        picked = self._pick_model(profile.id, models)
        shown = self.current()
        if shown is not None and shown.id == profile.id:
            self._fill_models(shown)
        if not models:
            self.test_status.setText("The provider listed no models.")
        elif picked is not None:
            self.test_status.setText(f"{plural(len(models), 'model')}; {picked} selected (choose another above).")
        else:
            self.test_status.setText(f"{plural(len(models), 'model')}.")

    def _pick_model(self, profile_id: str, models: list[str]) -> str | None:
        """Choose a model for a profile that has none: the preset's default if listed, else the first."""
        profile = next((p for p in self._profiles if p.id == profile_id), None)
        if profile is None or profile.model or not models:
            return None
        preset = PRESETS.get(profile.provider)
        default = preset.default_model if preset is not None else None
        model = default if default in models else models[0]
        self._profiles[self._profiles.index(profile)] = replace(profile, model=model)
        return model

    async def test_connection(self) -> None:
        """Test the shown profile with its key; show success or the typed error's message."""
        profile = self.current()
        if profile is None:
            return
        self.test_button.setEnabled(False)
        self.test_status.setText("Testing…")
        try:
            message = await self._calls.test_connection(
                profile.provider_profile(), await self._key_for(profile), profile.model
            )
        except TinyAgentError as error:
            self.test_status.setText(f"Failed: {error}")
        else:
            self.test_status.setText(f"✓ {message}")
        finally:
            self.test_button.setEnabled(True)

    async def _key_for(self, profile: ProfileConfig) -> str | None:
        """The key typed for ``profile``, else its stored one (read in a worker thread)."""
        typed = self._keys.get(profile.id)
        if typed:
            return typed
        return await asyncio.to_thread(self._key_store.key_for, profile)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no event loop runs (a synchronous test): nothing can be fetched
            coroutine.close()
            return
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- form ----------------------------------------------------------------------------------------------

    def _refresh_list(self, select: str | None) -> None:
        self._loading = True
        self.list.clear()
        for profile in self._profiles:
            item = QListWidgetItem(self._label(profile))
            item.setData(_ID, profile.id)
            self.list.addItem(item)
            if profile.id == select:
                self.list.setCurrentItem(item)
        self._loading = False
        self._show_current()

    def _label(self, profile: ProfileConfig) -> str:
        return f"{profile.name} (used for new sessions)" if profile.id == self._active else profile.name

    def _show_current(self) -> None:
        if self._loading:
            return
        profile = self.current()
        self.empty_hint.setVisible(not self._profiles)
        self.form.setEnabled(profile is not None)
        self.remove_button.setEnabled(profile is not None)
        self.active_button.setEnabled(profile is not None and profile.id != self._active)
        self._loading = True
        try:
            self.test_status.clear()
            if profile is None:
                for edit in (self.name_edit, self.url_edit, self.env_edit, self.key_edit, self.context_edit):
                    edit.clear()
                for combo in (self.api_combo, *self.dialect_combos.values()):
                    combo.setCurrentIndex(0)
                self.model_combo.clear()
                self.key_status.setText("Add a provider to configure it.")
                return
            preset = PRESETS.get(profile.provider)
            self.name_edit.setText(profile.name)
            self.url_edit.setText(profile.base_url or "")
            self.url_edit.setPlaceholderText(preset.base_url if preset else "http://host:port/v1")
            self.env_edit.setText(profile.key_env or "")
            self.key_edit.setText(self._keys.get(profile.id, ""))
            self.context_edit.setText(str(profile.context_length) if profile.context_length is not None else "")
            self._show_api(profile)
            self._show_dialect(profile)
            self._fill_models(profile)
        finally:
            self._loading = False
        self._show_key_status(profile)

    def _show_api(self, profile: ProfileConfig) -> None:
        """Select the profile's API kind (fixed for a preset) and show the dialect switches only for Chat
        Completions, the one kind they apply to."""
        kind = profile.api_kind
        index = self.api_combo.findData(kind)
        if index < 0:  # a kind this version does not speak (a newer settings file): shown, not offered
            self.api_combo.addItem(kind, kind)
            index = self.api_combo.count() - 1
        self.api_combo.setCurrentIndex(index)
        self.api_combo.setEnabled(profile.is_custom)
        for combo in self.dialect_combos.values():
            self._form_layout.setRowVisible(combo, kind == DEFAULT_API)
        self._form_layout.setRowVisible(self.server_state_check, keeps_server_state(kind))
        self.server_state_check.setChecked(bool(profile.server_state))

    def _show_dialect(self, profile: ProfileConfig) -> None:
        """Select each dialect switch's value and name the provider's default in its "Provider default" entry."""
        try:
            defaults = replace(profile, tool_choice_auto=None, stream_tools=None, null_content=None)
            dialect = defaults.provider_profile().dialect
        except SettingsError:  # a custom profile without a base URL yet
            dialect = Dialect()
        chosen = profile.dialect_settings()
        for field_name, combo in self.dialect_combos.items():
            default = "yes" if getattr(dialect, field_name) else "no"
            combo.setItemText(0, f"Provider default ({default})")
            combo.setCurrentIndex(max(0, combo.findData(chosen[field_name])))

    def _fill_models(self, profile: ProfileConfig) -> None:
        loading, self._loading = self._loading, True
        self.model_combo.clear()
        self.model_combo.addItems(self._models.get(profile.id, []))
        self.model_combo.setCurrentText(profile.model or "")
        self._loading = loading

    def _show_key_status(self, profile: ProfileConfig) -> None:
        status = self._key_store.status()
        preset = PRESETS.get(profile.provider)
        needed = preset.key_required if preset else False
        self.key_edit.setEnabled(status.available)
        self.forget_button.setEnabled(status.available)
        if not status.available:
            self.key_edit.setPlaceholderText("No system keyring")
            resolved = self._key_store.key_for(profile)
            have = f" {profile.key_env} is set: its key is used for this run." if resolved else ""
            self.key_status.setText(f"{self._key_store.environment_hint(profile)}{have}")  # why: see the top
            return
        self.key_edit.setPlaceholderText("Paste the key")
        if profile.id in self._keys:
            self.key_status.setText("The key typed here will be saved in the system keyring.")
        elif profile.id in self._forget:
            self.key_status.setText("The stored key will be deleted.")
        else:
            self.key_status.setText("Looking in the system keyring…")
            self._spawn(self._show_stored(profile.id, needed))

    async def _show_stored(self, profile_id: str, needed: bool) -> None:
        """Say whether the keyring holds a key for ``profile_id``, asked in a worker thread (the keyring may take a
        while, or ask the user to unlock it); nothing if another provider is shown by then or its key was changed."""
        failure: str | None = None
        try:
            stored = await asyncio.to_thread(self._key_store.has_key, profile_id)
        except SecretStoreError as error:
            stored, failure = False, str(error)
        current = self.current()
        if current is None or current.id != profile_id or profile_id in self._keys or profile_id in self._forget:
            return
        if failure is not None:
            self.key_status.setText(failure)
            return
        text = "A key is stored in the system keyring." if stored else "No key stored."
        if not stored and not needed:
            text += " This provider usually needs none."
        self.key_edit.setPlaceholderText("Type to replace the stored key" if stored else "Paste the key")
        self.key_status.setText(text)

    def _form_changed(self) -> None:
        profile = self.current()
        if self._loading or profile is None:
            return
        api = profile.api
        if profile.is_custom:
            chosen = self.api_combo.currentData()
            api = None if chosen == DEFAULT_API else chosen
        kind = replace(profile, api=api).api_kind
        updated = replace(
            profile,
            name=self.name_edit.text().strip(),
            base_url=normalize_base_url(self.url_edit.text()) or None,
            model=self.model_combo.currentText().strip() or None,
            key_env=self.env_edit.text().strip() or None,
            context_length=int(self.context_edit.text()) if self.context_edit.text().strip().isdigit() else None,
            api=api,
            server_state=self.server_state_check.isChecked() if keeps_server_state(kind) else None,
            **{name: combo.currentData() for name, combo in self.dialect_combos.items()},
        )
        self._profiles[self._profiles.index(profile)] = updated
        if updated.api != profile.api:
            loading, self._loading = self._loading, True
            self._show_api(updated)
            self._loading = loading
        item = self.list.currentItem()
        if item is not None:
            item.setText(self._label(updated))

    def _key_entered(self) -> None:
        """A key was typed for a profile without a model: list the models it gives access to."""
        profile = self.current()
        if profile is not None and not profile.model and profile.id in self._keys and profile.id not in self._models:
            self._spawn(self.fetch_models())

    def _key_typed(self, text: str) -> None:
        profile = self.current()
        if self._loading or profile is None:
            return
        if text.strip():
            self._keys[profile.id] = text.strip()
            self._forget.discard(profile.id)
        else:
            self._keys.pop(profile.id, None)
        self._show_key_status(profile)
