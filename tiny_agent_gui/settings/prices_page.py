"""The Prices tab: the rates in use for each configured model, and the user's price overrides, US dollars per
million tokens (SPEC §4). Overrides are applied by the dialog's Save.

"Rates in use" lists every configured profile's model with the rates that price it and where they come from
(:func:`tiny_agent_core.pricing.rates_in_use`: your override, the bundled table, a local server's "no API charge",
or unknown), following the overrides as they are edited; an unknown model has a "Set a price" button that adds
an override row for it (:meth:`PricesPage.prefill`, also what the cost view's "set a price →" leads to).

Each row is one :class:`~tiny_agent_core.pricing.PriceOverride` keyed ``(provider id, model or "*")``. Every cell
is an editor, checked as the user types: a rate is plain decimal notation (digits with an optional point, no sign,
no exponent), parsed with :class:`~decimal.Decimal` from the text and never through ``float``; the cache rates may
be left empty (those tokens then cost the input rate). Invalid cells are marked and described, and
:attr:`PricesPage.problemChanged` tells the dialog to disable Save.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from decimal import Decimal

from PySide6.QtCore import QEvent, QItemSelectionModel, QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QApplication,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.errors import SettingsError
from tiny_agent_core.pricing import PRICE_TABLE_VERSION, WILDCARD_MODEL, PriceOverride, Rates, rates_in_use
from tiny_agent_core.providers.profiles import PRESETS
from tiny_agent_core.settings import CUSTOM, AppSettings
from tiny_agent_gui.settings.providers_page import PRESET_ORDER

__all__ = ["ConfiguredModel", "PriceRow", "PricesPage", "configured_models"]

_RATE = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+", re.ASCII)
"""A non-negative rate in plain decimal notation."""
_RATE_COLUMNS = (("input", "Input"), ("output", "Output"), ("cache_read", "Cache read"), ("cache_write", "Cache write"))
"""(:class:`PriceOverride` attribute, column title) of each rate, in column order after provider and model."""
_OPTIONAL = frozenset({"cache_read", "cache_write"})
_HEADERS = ("Provider", "Model", *(title for _, title in _RATE_COLUMNS))
"""Column titles (short, so they are never clipped: the label above says the unit)."""
_INVALID = "invalid"
"""Dynamic property set on a cell editor whose text is not accepted (the table's style sheet marks it)."""
_STYLE = 'QLineEdit[invalid="true"] { border: 2px solid #d32f2f; }'
_RATES_HEADERS = ("Model", "Rates from", "Input", "Output", "Cache read", "Cache write", "")
_SOURCE_TEXT = {"override": "your override", "price_table": "price table", "local": "local — no API charge"}


@dataclass(frozen=True, slots=True)
class ConfiguredModel:
    """A configured profile's model, as requests name it: the provider id the ledger records, and locality."""

    provider: str
    model: str
    local: bool


def configured_models(settings: AppSettings) -> list[ConfiguredModel]:
    """Every profile's chosen model (profiles without one, or with an unusable base URL, are left out)."""
    found: list[ConfiguredModel] = []
    for profile in settings.profiles:
        if not profile.model:
            continue
        try:
            provider = profile.provider_profile()
        except SettingsError:
            continue
        entry = ConfiguredModel(provider.id, profile.model, provider.is_local)
        if entry not in found:
            found.append(entry)
    return found


def _rate_cell(rates: Rates, value: Decimal | None) -> str:
    if rates.source is None:
        return "—"
    return "= input" if value is None else str(value)


def _parse_rate(text: str) -> Decimal | None:
    """A rate as typed, exactly (``Decimal`` from the text); ``None`` when empty; ``ValueError`` unless it is plain,
    non-negative decimal notation such as ``2.5`` or ``0.075`` (surrounding spaces are ignored)."""
    stripped = text.strip()
    if not stripped:
        return None
    if not _RATE.fullmatch(stripped):
        raise ValueError(f"{stripped!r} is not a non-negative number such as 2.5 (digits and one point)")
    return Decimal(stripped)


def _required_rate(text: str) -> Decimal:
    """Like :func:`_parse_rate`, but an empty rate is a ``ValueError`` too."""
    rate = _parse_rate(text)
    if rate is None:
        raise ValueError("enter a price (0 for free)")
    return rate


@dataclass(frozen=True, slots=True)
class PriceRow:
    """The editors of one table row."""

    provider: QComboBox
    model: QLineEdit
    input: QLineEdit
    output: QLineEdit
    cache_read: QLineEdit
    cache_write: QLineEdit

    def editors(self) -> tuple[QWidget, ...]:
        """The row's editors in column (and tab) order."""
        return (self.provider, self.model, self.input, self.output, self.cache_read, self.cache_write)

    def rate(self, attribute: str) -> QLineEdit:
        """The editor of a rate by its :class:`PriceOverride` attribute name."""
        editor: QLineEdit = getattr(self, attribute)
        return editor


class PricesPage(QWidget):
    """Staged price overrides in an editable table; :meth:`overrides` gives them once :meth:`problem` is ``None``."""

    problemChanged = Signal(str)
    """The first problem that blocks Save, or ``""`` when every row is valid."""

    def __init__(self, settings: AppSettings) -> None:
        super().__init__()
        self._rows: list[PriceRow] = []
        self._current: PriceRow | None = None
        """The row Remove acts on: the one last focused or added (the table's own current index is not used: setting
        it moves the keyboard focus into that cell's editor)."""
        self._problem = ""

        intro = QLabel(
            "Prices are US dollars per million tokens. The provider's own figure (OpenRouter reports one) always "
            "wins; an override here applies before the bundled price table. Requests to local servers (Ollama, "
            "LM Studio, vLLM, llama.cpp, any base URL on this machine or your network) count as local — no API "
            "charge — unless you set a price here (electricity, rented GPU time). Model * covers every model of "
            "that provider without its own row; an empty cache rate means the input rate; custom covers every "
            "custom base URL profile. Failed requests without usage are never billed."
        )
        intro.setWordWrap(True)
        self.version_label = QLabel(f"Bundled price table: {PRICE_TABLE_VERSION}")
        self.version_label.setAccessibleName("Price table version")
        self.version_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.table = QTableWidget(0, len(_HEADERS))
        self.table.setAccessibleName("Price overrides")
        self.table.setHorizontalHeaderLabels(list(_HEADERS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        # The row editors are the focus stops; Tab leaves a cell for the next editor, not the next cell.
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.table.setTabKeyNavigation(False)
        self.table.setStyleSheet(_STYLE)
        self.table.setCornerButtonEnabled(False)  # "select all" means nothing here: Remove acts on one row
        corner = self.table.findChild(QAbstractButton)
        if corner is not None:
            corner.setAccessibleName("Price overrides table corner")
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.table_label = QLabel("O&verrides (US $ per million tokens):")

        self._configured = configured_models(settings)
        self._saved_overrides = dict(settings.price_overrides)
        self.rates_label = QLabel("Rates in use for your configured models (US $ per million tokens):")
        self.rates_table = QTableWidget(0, len(_RATES_HEADERS))
        self.rates_table.setAccessibleName("Rates in use")
        self.rates_table.setCornerButtonEnabled(False)  # nothing to select: the table only informs
        corner = self.rates_table.findChild(QAbstractButton)
        if corner is not None:
            corner.setAccessibleName("Rates in use table corner")
        self.rates_table.setHorizontalHeaderLabels(list(_RATES_HEADERS))
        self.rates_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.rates_table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.rates_table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.rates_table.verticalHeader().setVisible(False)
        self.rates_table.setWordWrap(False)
        rates_header = self.rates_table.horizontalHeader()
        rates_header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        rates_header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.rates_label.setVisible(bool(self._configured))
        self.rates_table.setVisible(bool(self._configured))
        self.set_price_buttons: list[QPushButton] = []

        self.add_button = QPushButton("&Add override")
        self.add_button.setAccessibleName("Add a price override")
        self.remove_button = QPushButton("Re&move override")
        self.remove_button.setAccessibleName("Remove the selected price override")
        self.problem_label = QLabel()
        self.problem_label.setWordWrap(True)
        self.problem_label.setAccessibleName("Price override problem")

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.version_label)
        layout.addWidget(self.table_label)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.problem_label)
        row = QHBoxLayout()
        row.addWidget(self.add_button)
        row.addWidget(self.remove_button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(self.rates_label)
        layout.addWidget(self.rates_table)

        self.add_button.clicked.connect(self.add_override)
        self.remove_button.clicked.connect(self.remove_selected)
        for (provider, model), price in sorted(settings.price_overrides.items()):
            self._append(provider, model, price)
        self._select(self._rows[0] if self._rows else None)
        self._relink()
        self._validate()

    # -- reading -------------------------------------------------------------------------------------------

    def rows(self) -> list[PriceRow]:
        """The rows' editors, top to bottom."""
        return list(self._rows)

    def problem(self) -> str | None:
        """What keeps the table from being saved (the first problem, with a count of the others), else ``None``."""
        return self._problem or None

    def overrides(self) -> dict[tuple[str, str], PriceOverride]:
        """The overrides as edited; ``ValueError`` with :meth:`problem` while any cell is invalid."""
        if self._problem:
            raise ValueError(self._problem)
        overrides: dict[tuple[str, str], PriceOverride] = {}
        for row in self._rows:
            overrides[(row.provider.currentData(), row.model.text().strip())] = PriceOverride(
                input=_required_rate(row.input.text()),
                output=_required_rate(row.output.text()),
                cache_read=_parse_rate(row.cache_read.text()),
                cache_write=_parse_rate(row.cache_write.text()),
            )
        return overrides

    def rates(self) -> list[tuple[ConfiguredModel, Rates]]:
        """The configured models and the rates in use for them (with the overrides as edited, while valid)."""
        overrides = self._saved_overrides if self._problem else self.overrides()
        return [
            (entry, rates_in_use(entry.provider, entry.model, overrides, local=entry.local))
            for entry in self._configured
        ]

    # -- editing -------------------------------------------------------------------------------------------

    def prefill(self, provider: str, model: str) -> PriceRow:
        """Show the override row for ``provider`` and ``model``, adding an empty one if there is none, and put the
        keyboard focus in its input price (the way from an unknown cost to a price)."""
        row = next(
            (r for r in self._rows if r.provider.currentData() == provider and r.model.text().strip() == model), None
        )
        if row is None:
            row = self._append(provider, model, None)
            self._relink()
            self._validate()
        self._select(row)
        self.table.scrollTo(self.table.model().index(self._rows.index(row), 2))
        row.input.setFocus(Qt.FocusReason.OtherFocusReason)
        return row

    def add_override(self) -> None:
        """Add an empty row (provider OpenAI, model ``*``) and put the keyboard focus in it."""
        row = self._append(PRESET_ORDER[0], WILDCARD_MODEL, None)
        self._select(row)
        self._relink()
        self._validate()
        row.provider.setFocus(Qt.FocusReason.OtherFocusReason)

    def remove_selected(self) -> None:
        """Remove the selected row (the one last focused or added)."""
        if self._current is None:
            return
        index = self._rows.index(self._current)
        removed = self._rows.pop(index).editors()
        if QApplication.focusWidget() in removed:
            # Move the focus first: losing it inside removeRow would re-enter the table from eventFilter.
            self.remove_button.setFocus(Qt.FocusReason.OtherFocusReason)
        for editor in removed:
            editor.removeEventFilter(self)
        self.table.removeRow(index)
        for number, row in enumerate(self._rows[index:], start=index + 1):
            _name(row, number)
        self._select(self._rows[min(index, len(self._rows) - 1)] if self._rows else None)
        self._relink()
        self._validate()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Select the row of a focused editor (Remove acts on it) and scroll the editor into view."""
        if event.type() == QEvent.Type.FocusIn:
            for index, row in enumerate(self._rows):
                for column, editor in enumerate(row.editors()):
                    if editor is watched:
                        self._select(row)
                        self.table.scrollTo(self.table.model().index(index, column))
        return super().eventFilter(watched, event)

    def selected_row(self) -> PriceRow | None:
        """The row Remove acts on, if any."""
        return self._current

    def _select(self, row: PriceRow | None) -> None:
        """Make ``row`` the one Remove acts on and highlight it (without moving the keyboard focus)."""
        self._current = row
        selection = self.table.selectionModel()
        if row is None:
            selection.clearSelection()
            return
        index = self.table.model().index(self._rows.index(row), 0)
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        selection.select(index, flags)

    def _append(self, provider: str, model: str, price: PriceOverride | None) -> PriceRow:
        combo = QComboBox()
        for preset_id in PRESET_ORDER:
            combo.addItem(f"{PRESETS[preset_id].name} ({preset_id})", preset_id)
        combo.addItem(f"Custom base URL ({CUSTOM})", CUSTOM)
        if combo.findData(provider) < 0:  # a provider id from a hand-edited file is kept as it is
            combo.addItem(f"{provider} (not a preset)", provider)
        combo.setCurrentIndex(combo.findData(provider))

        def rate(name: str) -> QLineEdit:
            value = None if price is None else getattr(price, name)
            return QLineEdit("" if value is None else str(value))

        row = PriceRow(combo, QLineEdit(model), rate("input"), rate("output"), rate("cache_read"), rate("cache_write"))
        row.model.setPlaceholderText("model id, or * for all")
        for name, _ in _RATE_COLUMNS:
            editor = row.rate(name)
            editor.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            editor.setPlaceholderText("= input rate" if name in _OPTIONAL else "$ per million")
        index = len(self._rows)
        self._rows.append(row)
        self.table.insertRow(index)
        for column, cell in enumerate(row.editors()):
            self.table.setCellWidget(index, column, cell)
            cell.installEventFilter(self)
        _name(row, index + 1)
        combo.currentIndexChanged.connect(lambda _: self._validate())
        for line in (row.model, *(row.rate(name) for name, _ in _RATE_COLUMNS)):
            line.textChanged.connect(lambda _: self._validate())
        return row

    def _relink(self) -> None:
        """Tab order: the rows' editors left to right, top to bottom, then Add and Remove."""
        chain: list[QWidget] = [editor for row in self._rows for editor in row.editors()]
        chain += [self.add_button, self.remove_button]
        for before, after in itertools.pairwise(chain):
            QWidget.setTabOrder(before, after)
        self.table_label.setBuddy(self._rows[0].provider if self._rows else self.add_button)
        self.remove_button.setEnabled(bool(self._rows))

    # -- validation ----------------------------------------------------------------------------------------

    def _validate(self) -> None:
        problems: list[str] = []
        seen: dict[tuple[str, str], int] = {}
        for number, row in enumerate(self._rows, start=1):
            model = row.model.text().strip()
            model_problem = ""
            if not model:
                model_problem = "enter a model id, or * for every model"
            else:
                key = (row.provider.currentData(), model)
                if key in seen:
                    model_problem = f"row {seen[key]} already sets prices for {key[0]} {model}"
                seen.setdefault(key, number)
            _mark(row.model, model_problem, "")
            if model_problem:
                problems.append(f"Row {number}, model: {model_problem}.")
            for name, title in _RATE_COLUMNS:
                editor = row.rate(name)
                rate_problem = ""
                try:
                    (_parse_rate if name in _OPTIONAL else _required_rate)(editor.text())
                except ValueError as error:
                    rate_problem = str(error)
                _mark(editor, rate_problem, "empty: the input rate" if name in _OPTIONAL else "")
                if rate_problem:
                    problems.append(f"Row {number}, {title.lower()} $/M: {rate_problem}.")
        problem = ""
        if problems:
            more = len(problems) - 1
            problem = problems[0] + (f" ({more} more problem{'s' * (more > 1)} marked.)" if more else "")
        self.problem_label.setText(problem and f"Not saved until fixed — {problem}")
        if problem != self._problem:
            self._problem = problem
            self.problemChanged.emit(problem)
        self._show_rates()

    def _show_rates(self) -> None:
        """Fill "Rates in use" (unknown models get a Set a price button)."""
        shown = self.rates()
        self.rates_table.setRowCount(len(shown))
        self.set_price_buttons = []
        for number, (entry, rates) in enumerate(shown):
            cells = [
                f"{entry.provider} · {entry.model}",
                _SOURCE_TEXT.get(rates.source or "", "unknown — no price"),
                _rate_cell(rates, rates.input),
                _rate_cell(rates, rates.output),
                _rate_cell(rates, rates.cache_read),
                _rate_cell(rates, rates.cache_write),
            ]
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(f"{cells[0]}: {rates.detail}" if column == 0 else rates.detail)
                if column >= 2:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.rates_table.setItem(number, column, item)
            self.rates_table.removeCellWidget(number, len(cells))
            if rates.source is None:
                button = QPushButton("Set a price")
                button.setAccessibleName(f"Set a price for {entry.provider} {entry.model}")
                button.clicked.connect(lambda _=False, e=entry: self.prefill(e.provider, e.model))
                self.set_price_buttons.append(button)
                self.rates_table.setCellWidget(number, len(cells), button)


def _name(row: PriceRow, number: int) -> None:
    """Accessible names that say which row and column an editor is in."""
    row.provider.setAccessibleName(f"Provider, row {number}")
    row.model.setAccessibleName(f"Model, row {number}")
    for name, title in _RATE_COLUMNS:
        row.rate(name).setAccessibleName(f"{title} price in dollars per million tokens, row {number}")


def _mark(editor: QLineEdit, problem: str, hint: str) -> None:
    """Mark an editor invalid (border, tooltip and accessible description say why) or clear the mark."""
    invalid = bool(problem)
    editor.setToolTip(f"Invalid: {problem}" if invalid else hint)
    editor.setAccessibleDescription(f"Invalid: {problem}" if invalid else hint)
    if editor.property(_INVALID) != invalid:
        editor.setProperty(_INVALID, invalid)
        editor.style().unpolish(editor)
        editor.style().polish(editor)
