"""The model picker (Ctrl+M): provider · model with price per million tokens and context window; type to filter.

:class:`ModelCatalog` keeps the rows (:class:`~tiny_agent_core.model_catalog.ModelEntry`) of every provider profile
in the settings: each profile's chosen model at once, then what its ``GET /models`` lists, fetched on the event
loop (keys are read from the keyring in a worker thread) so the window never waits. :class:`ModelPicker` is the
dialog; :class:`ModelButton` sits above the composer and shows the model the next request uses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx
from PySide6.QtCore import QCoreApplication, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QFont, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.errors import SecretStoreError, SettingsError, TinyAgentError
from tiny_agent_core.model_catalog import ModelEntry, entries_for, filter_entries, profile_models
from tiny_agent_core.pricing import Overrides
from tiny_agent_core.providers.profiles import context_length
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_gui.column_model import ColumnModel

_log = logging.getLogger(__name__)

ModelIndex = QModelIndex | QPersistentModelIndex
ENTRY_ROLE = Qt.ItemDataRole.UserRole + 1
"""The row's :class:`~tiny_agent_core.model_catalog.ModelEntry`."""
COLUMNS = ("Model", "Price in / out per M tokens", "Context")


class ModelCatalog(QObject):
    """The models of the configured providers, refreshed off the GUI thread; ``changed`` after each update."""

    changed = Signal()

    def __init__(
        self,
        settings: AppSettings,
        keys: KeyStore,
        http: httpx.AsyncClient | None,
        overrides: Callable[[], Overrides | None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._settings = settings
        self._keys = keys
        self._http = http
        self._overrides = overrides
        self._fetched: dict[str, tuple[list[str], int | None]] = {}
        """Profile id → (listed models, context window of its chosen model)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.problems: dict[str, str] = {}
        """Profile name → why its models could not be listed."""

    def entries(self) -> list[ModelEntry]:
        """Every row: per profile, its chosen model first, then the listed ones."""
        return [entry for config in self._settings.profiles for entry in self._entries_of(config)]

    def _entries_of(self, config: ProfileConfig) -> list[ModelEntry]:
        """One profile's rows: its chosen model first, then the listed ones."""
        models, window = self._fetched.get(config.id, ([], None))
        try:
            return entries_for(config, models, self._overrides(), context=window)
        except SettingsError as error:  # a profile this version cannot use: say so, list the rest
            self.problems[config.name] = str(error)
            return []

    @property
    def loading(self) -> bool:
        """True while model lists are being fetched."""
        return bool(self._tasks)

    def refresh(self) -> None:
        """Fetch the model list of every profile not fetched yet (at most one fetch per profile at a time)."""
        if self._http is None:
            return
        busy = {task.get_name() for task in self._tasks}
        for config in self._settings.profiles:
            if config.id in self._fetched or config.id in busy:
                continue
            task = asyncio.ensure_future(self._fetch(self._http, config))
            task.set_name(config.id)
            self._tasks.add(task)
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.warning("listing models failed: %r", task.exception())
        self.changed.emit()

    async def _fetch(self, http: httpx.AsyncClient, config: ProfileConfig) -> None:
        try:
            key = await asyncio.to_thread(self._keys.key_for, config)
        except SecretStoreError as error:
            self.problems[config.name] = f"its key could not be read ({error})"
            key = None
        try:
            models = await profile_models(http, config, key)
            window = await context_length(http, config.provider_profile(), config.model, key) if config.model else None
        except (TinyAgentError, httpx.HTTPError) as error:
            self.problems[config.name] = str(error)
            return
        self.problems.pop(config.name, None)
        self._fetched[config.id] = (models, window)

    def invalidate(self) -> None:
        """Forget the fetched lists (the settings changed: a profile may point elsewhere now)."""
        self._fetched.clear()
        self.problems.clear()
        self.changed.emit()

    def entry_for(self, profile_id: str, model: str) -> ModelEntry | None:
        """The row of ``model`` of profile ``profile_id``, if the catalog has it (only that profile's rows are built:
        the status bar asks after every step)."""
        config = self._settings.profile(profile_id)
        if config is None:
            return None
        return next((entry for entry in self._entries_of(config) if entry.model == model), None)

    def close(self) -> None:
        """Stop fetches in flight (the window is closing)."""
        for task in self._tasks:
            task.cancel()


class ModelTable(ColumnModel):
    """The shown (filtered) rows of the picker; the chosen row is bold."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(COLUMNS, parent)
        self._rows: list[ModelEntry] = []
        self.current: tuple[str, str] | None = None
        """``(profile id, model)`` the next request uses."""

    def set_rows(self, rows: list[ModelEntry]) -> None:
        """Show ``rows``."""
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()

    def row_count(self) -> int:
        """Rows shown."""
        return len(self._rows)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Text per column, the entry under :data:`ENTRY_ROLE`, bold for the current model."""
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        entry = self._rows[index.row()]
        if role == ENTRY_ROLE:
            return entry
        if role == Qt.ItemDataRole.DisplayRole:
            return (entry.label, entry.price_text, entry.context_text)[index.column()]
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{entry.label}\n{entry.rates.detail}"
        if role == Qt.ItemDataRole.FontRole and (entry.profile_id, entry.model) == self.current:
            font = QFont()
            font.setBold(True)
            return font
        return None


class ModelPicker(QDialog):
    """Choose a model: type to filter, ↑/↓ to move, Enter to choose. ``chosen(entry)`` fires on accept."""

    chosen = Signal(object)
    """The :class:`~tiny_agent_core.model_catalog.ModelEntry` picked."""

    def __init__(
        self, catalog: ModelCatalog, current: tuple[str, str] | None, title: str, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setAccessibleName(title)
        self._catalog = catalog
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Type to filter by provider or model")
        self.filter.setAccessibleName("Filter models")
        self.filter.setClearButtonEnabled(True)
        self.table_model = ModelTable(self)
        self.table_model.current = current
        self.table = QTableView(self)
        self.table.setAccessibleName("Models")
        self.table.setModel(self.table_model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in (1, 2):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.table.doubleClicked.connect(lambda _index: self.accept())
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Model list status")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        self.ok_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText("&Use this model")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.filter)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)
        layout.addWidget(buttons)
        self.filter.textChanged.connect(self._refilter)
        self.filter.installEventFilter(self)
        catalog.changed.connect(self._refilter)
        self.resize(760, 420)
        self._refilter()
        catalog.refresh()
        self._show_status()

    def eventFilter(self, watched: QObject, event: Any) -> bool:
        """↑/↓ and Page keys in the filter move the selection in the table."""
        if watched is self.filter and isinstance(event, QKeyEvent) and event.type() == QKeyEvent.Type.KeyPress:
            moves = (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown)
            if event.key() in moves:
                QCoreApplication.sendEvent(self.table, event)
                return True
        return super().eventFilter(watched, event)

    def selected(self) -> ModelEntry | None:
        """The entry of the selected row."""
        entry = self.table.currentIndex().data(ENTRY_ROLE)
        return entry if isinstance(entry, ModelEntry) else None

    def accept(self) -> None:
        """Emit ``chosen`` for the selected model and close."""
        entry = self.selected()
        if entry is None:
            return
        super().accept()
        self.chosen.emit(entry)

    def _refilter(self) -> None:
        previous = self.selected()
        rows = filter_entries(self._catalog.entries(), self.filter.text())
        self.table_model.set_rows(rows)
        keys = [(entry.profile_id, entry.model) for entry in rows]
        wanted = (previous.profile_id, previous.model) if previous is not None else self.table_model.current
        row = keys.index(wanted) if wanted in keys else 0
        if rows:
            self.table.setCurrentIndex(self.table_model.index(row, 0))
        self.ok_button.setEnabled(bool(rows))
        if self.isVisible():
            self._show_status()

    def _show_status(self) -> None:
        parts = [f"{name}: models could not be listed — {why}" for name, why in self._catalog.problems.items()]
        if self._catalog.loading:
            parts.insert(0, "Fetching the providers' model lists…")
        if not self._catalog.entries():
            parts.append("No provider is set up yet (Settings → Providers).")
        parts.append("Prices are US dollars per million input / output tokens; the choice applies to the next request.")
        self.status.setText("\n".join(parts))


class ModelButton(QPushButton):
    """Above the composer: the provider · model of the next request; opens the picker (Ctrl+M)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Model")
        self.setFlat(True)
        self.show_model(None)

    def show_model(self, label: str | None) -> None:
        """Show ``provider · model``, or that none is configured."""
        text = label or "No model configured"
        self.setText(f"{text}  ▾")
        self.setToolTip(f"Model for the next request: {text} — Ctrl+M to change")
        self.setAccessibleDescription(self.toolTip())
