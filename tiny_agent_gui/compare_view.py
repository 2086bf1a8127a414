"""The compare view (Ctrl+3): one task on 2–4 models at once, each in its own copy of the workspace, side by side.

The view adapts a :class:`~tiny_agent_core.compare.CompareRun` (which does the work) into a table that updates as
the runs stream — outcome, wall time, model requests, tool calls by outcome, tokens, cost (unknown shown as
unknown) and files changed — and shows the selected run's diff against the starting tree. Esc (the window's Stop)
cancels every run; each run is a normal session that "Open Session" opens. "Keep This One…" applies the selected
run's changes to the workspace after the user approves the list of files, then removes every copy
(:func:`~tiny_agent_core.comparisons.keep_run`); "Discard Copies" only removes them
(:func:`~tiny_agent_core.comparisons.discard_copies`); the sessions stay either way.

Every compare is saved (:mod:`~tiny_agent_core.comparisons`); "Earlier comparisons" lists them (read in a worker
thread when the view is first shown and after every change) and "Reopen" shows one again from its record: its
figures, its diffs (saved with it, so they survive the copies) and its sessions.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QFontDatabase, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.compare import MAX_CONTENDERS, MIN_CONTENDERS, CompareRun, Contender, RunReport
from tiny_agent_core.comparisons import (
    Comparison,
    discard_copies,
    keep_run,
    list_comparisons,
    load_comparison,
)
from tiny_agent_core.errors import TinyAgentError
from tiny_agent_core.ledger.costs import cost_text
from tiny_agent_core.model_catalog import ModelEntry
from tiny_agent_core.paths import comparisons_folder
from tiny_agent_core.trace import duration_text
from tiny_agent_core.worktrees import changes_diff
from tiny_agent_gui.column_model import ColumnModel
from tiny_agent_gui.cost.formatting import local_time_text

_log = logging.getLogger(__name__)

ModelIndex = QModelIndex | QPersistentModelIndex
COLUMNS = ("Model", "Outcome", "Time", "Requests", "Tool calls", "Tokens", "Cost", "Files changed")
TOOLS = ("read", "write", "edit", "bash")
"""Tools a compare run may offer; the checked ones run without asking (in the run's copy), others are denied."""
StartRun = Callable[[str, list[ModelEntry], list[str], Callable[[int], None]], CompareRun | None]
"""``start(prompt, models, allowed tools, on_change)`` → the run (or ``None`` with the reason shown elsewhere)."""
EntryFor = Callable[[Contender], ModelEntry | None]
"""The model-list row of a saved run's model, or ``None`` when its provider is no longer configured."""


def _tokens(report: RunReport) -> str:
    usage = report.usage
    if usage is None:
        return "unknown" if report.requests else "—"
    text = f"in {usage.input:,} · out {usage.output:,}"
    if usage.cache_read or usage.cache_write:
        text += f" · cache {usage.cache_read:,}/{usage.cache_write:,}"
    return text + (f" + {report.unknown_usage} unknown" if report.unknown_usage else "")


_SOURCES = {
    "provider": "provider's figure",
    "price_table": "price table",
    "override": "your price",
    "local": "local",
    "not_billed": "not billed",
}


def _cost(report: RunReport) -> str:
    if report.cost is None:
        return "unknown" if report.requests else "—"
    if report.cost_sources == {"local"} and not report.unknown_cost:
        return "local — no API charge"
    sources = ", ".join(sorted(_SOURCES.get(source, source) for source in report.cost_sources))
    return cost_text(report.cost, report.unknown_cost) + (f" ({sources})" if sources else "")


def _tool_calls(report: RunReport) -> str:
    if not report.tools:
        return "0"
    parts = ", ".join(f"{kind} {count}" for kind, count in sorted(report.tools.items()))
    return f"{report.tool_calls}: {parts}"


def _files(report: RunReport) -> str:
    if not report.ended:
        return "…"
    added = sum(change.added for change in report.changes)
    removed = sum(change.removed for change in report.changes)
    return f"{len(report.changes)} (+{added} −{removed})" if report.changes else "none"


def _summary(report: RunReport) -> str:
    """The run's outcome with its answer or error, for the tooltip and above its diff."""
    detail = report.error or report.answer
    return f"{report.contender.label} — {report.status}" + (f": {detail}" if detail else "")


def _when(comparison: Comparison) -> str:
    return local_time_text(comparison.started_at)


def _saved_text(comparison: Comparison) -> str:
    """One line of the "Earlier comparisons" list."""
    done = sum(1 for report in comparison.reports if report.status == "completed")
    text = f"{_when(comparison)} · {comparison.title} · {done}/{len(comparison.reports)} completed"
    if comparison.kept is not None:
        return text + f" · kept run {comparison.kept + 1}"
    return text + (" · copies removed" if comparison.copies_removed else "")


class CompareTable(ColumnModel):
    """One row per run of the current compare (live or reopened); keeps no copy of the reports."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(COLUMNS, parent)
        self._reports: list[RunReport] = []

    def set_reports(self, reports: list[RunReport]) -> None:
        """Show ``reports`` (the list a running compare updates in place)."""
        self.beginResetModel()
        self._reports = reports
        self.endResetModel()

    def report(self, row: int) -> RunReport | None:
        """The report shown in ``row``."""
        return self._reports[row] if 0 <= row < len(self._reports) else None

    def row_changed(self, row: int) -> None:
        """Repaint ``row`` (its run moved on)."""
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    def row_count(self) -> int:
        """Rows shown."""
        return len(self._reports)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """The run's figures as text (full text in the tooltip)."""
        report = self.report(index.row()) if index.isValid() else None
        if report is None:
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            return _summary(report)
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        texts = (
            report.contender.label,
            report.status,
            duration_text(round(report.wall_ms)) if report.wall_ms is not None else "—",
            str(report.requests),
            _tool_calls(report),
            _tokens(report),
            _cost(report),
            _files(report),
        )
        return texts[index.column()]


class CompareView(QWidget):
    """Set up a compare (prompt, 2–4 models, tools allowed without asking), run it, and read the results."""

    session_requested = Signal(object)
    """The :class:`~pathlib.Path` of a run's session file to open."""
    add_model_requested = Signal()
    """The user wants to add a model (the window opens the picker and calls :meth:`add_model`)."""
    model_added = Signal(object)
    """A :class:`~tiny_agent_core.model_catalog.ModelEntry` joined the models to compare (the window reads its
    provider's key ahead, off the GUI thread)."""
    running_changed = Signal(bool)

    def __init__(
        self,
        start: StartRun,
        parent: QWidget | None = None,
        *,
        folder: Path | None = None,
        entry_for: EntryFor | None = None,
    ) -> None:
        """``folder``: where comparisons are saved (default :func:`~tiny_agent_core.paths.comparisons_folder`,
        where the window's compare runs put them); ``entry_for``: how a reopened comparison's models are put back
        in the list (without it they are not)."""
        super().__init__(parent)
        self.setAccessibleName("Compare")
        self._start = start
        self._entry_for = entry_for
        self._folder = folder if folder is not None else comparisons_folder()
        self._run: CompareRun | None = None
        self._comparison: Comparison | None = None
        self._task: asyncio.Task[list[RunReport]] | None = None
        self._work: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._models: list[ModelEntry] = []
        self._saved: list[Comparison] = []
        self._listed = False

        self.saved = QComboBox()
        self.saved.setAccessibleName("Earlier comparisons")
        self.saved.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.saved.setMinimumContentsLength(20)
        self.saved.setPlaceholderText("No earlier comparisons")
        self.reopen_button = QPushButton("Re&open")
        self.reopen_button.setToolTip("Show the chosen comparison again: its runs, diffs and sessions")
        self.reopen_button.clicked.connect(self._reopen_chosen)
        saved_row = QHBoxLayout()
        saved_row.addWidget(QLabel("Earlier comparisons:"))
        saved_row.addWidget(self.saved, 1)
        saved_row.addWidget(self.reopen_button)

        intro = QLabel(
            "Run one task on 2–4 models at once. Each run works in its own copy of the workspace (a git worktree, "
            "or a copy in the data folder), so the workspace itself is not changed; each is a normal session."
        )
        intro.setWordWrap(True)
        self.prompt = QPlainTextEdit()
        self.prompt.setAccessibleName("Compare prompt")
        self.prompt.setPlaceholderText("The task every model gets")
        self.prompt.setTabChangesFocus(True)
        self.prompt.setMaximumHeight(self.prompt.fontMetrics().lineSpacing() * 3 + 12)
        self.models = QListWidget()
        self.models.setAccessibleName("Models to compare")
        self.models.setMaximumHeight(self.models.fontMetrics().lineSpacing() * 4 + 12)
        self.add_button = QPushButton("&Add Model…")
        self.add_button.clicked.connect(self.add_model_requested)
        self.remove_button = QPushButton("&Remove")
        self.remove_button.clicked.connect(self._remove_model)
        self.tool_boxes = {name: QCheckBox(name) for name in TOOLS}
        for name in ("read", "write", "edit"):
            self.tool_boxes[name].setChecked(True)
        self.start_button = QPushButton("&Start Compare")
        self.start_button.clicked.connect(self.start)
        self.stop_button = QPushButton("Stop (Esc)")
        self.stop_button.clicked.connect(self.cancel)

        model_buttons = QVBoxLayout()
        model_buttons.addWidget(self.add_button)
        model_buttons.addWidget(self.remove_button)
        model_buttons.addStretch(1)
        models_row = QHBoxLayout()
        models_row.addWidget(self.models, 1)
        models_row.addLayout(model_buttons)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Run without asking:"))
        for box in self.tool_boxes.values():
            controls.addWidget(box)
        controls.addStretch(1)
        controls.addWidget(self.start_button)
        controls.addWidget(self.stop_button)

        self.table_model = CompareTable(self)
        self.table = QTableView()
        self.table.setAccessibleName("Compared runs")
        self.table.setModel(self.table_model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        rows = MAX_CONTENDERS + 1  # the header and every run fit without scrolling
        self.table.setMinimumHeight(
            rows * self.table.verticalHeader().defaultSectionSize() + 2 * self.table.frameWidth()
        )
        self.table.selectionModel().currentRowChanged.connect(lambda current, _previous: self._show_diff())
        self.table.doubleClicked.connect(lambda _index: self._open_session())
        self.diff = QPlainTextEdit()
        self.diff.setAccessibleName("Changes of the selected run")
        self.diff.setReadOnly(True)
        self.diff.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.diff.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.diff.setPlaceholderText("Select a run to see the changes it made to its copy")
        self.open_button = QPushButton("&Open Session")
        self.open_button.clicked.connect(self._open_session)
        self.keep_button = QPushButton("&Keep This One…")
        self.keep_button.setToolTip("Apply the selected run's changes to the workspace (you approve the files first)")
        self.keep_button.clicked.connect(self._ask_keep)
        self.discard_button = QPushButton("&Discard Copies")
        self.discard_button.setToolTip("Remove every run's copy of the workspace (the sessions and diffs are kept)")
        self.discard_button.clicked.connect(lambda: self._spawn(self.discard()) if not self.busy else None)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Compare status")

        results = QSplitter(Qt.Orientation.Vertical)
        results.addWidget(self.table)
        results.addWidget(self.diff)
        results.setStretchFactor(0, 1)
        results.setStretchFactor(1, 2)
        footer = QHBoxLayout()
        footer.addWidget(self.status, 1)
        footer.addWidget(self.discard_button)
        footer.addWidget(self.keep_button)
        footer.addWidget(self.open_button)
        layout = QVBoxLayout(self)
        layout.addLayout(saved_row)
        layout.addWidget(intro)
        layout.addWidget(self.prompt)
        layout.addLayout(models_row)
        layout.addLayout(controls)
        layout.addWidget(results, 1)
        layout.addLayout(footer)
        self._update_controls()

    @property
    def running(self) -> bool:
        """True while a compare runs."""
        return self._task is not None and not self._task.done()

    @property
    def busy(self) -> bool:
        """True while a compare runs or its copies are being kept or removed."""
        return self.running or (self._work is not None and not self._work.done())

    @property
    def run(self) -> CompareRun | None:
        """The current (or last) compare run started here."""
        return self._run

    @property
    def comparison(self) -> Comparison | None:
        """The comparison shown: the current run's, or one reopened."""
        return self._comparison

    def showEvent(self, event: QShowEvent) -> None:
        """List the earlier comparisons the first time the view is shown."""
        super().showEvent(event)
        if not self._listed:
            self._listed = True
            self._spawn(self.refresh_saved(), busy=False)

    async def refresh_saved(self) -> None:
        """Read the earlier comparisons again (in a worker thread) and list them."""
        try:
            saved = await asyncio.to_thread(list_comparisons, self._folder)
        except TinyAgentError as error:
            self.status.setText(str(error))
            return
        current = self._comparison.id if self._comparison is not None else None
        self._saved = saved
        self.saved.clear()
        for comparison in saved:
            self.saved.addItem(_saved_text(comparison), comparison.id)
            self.saved.setItemData(
                self.saved.count() - 1,
                "\n".join(report.contender.label for report in comparison.reports),
                Qt.ItemDataRole.ToolTipRole,
            )
        row = self.saved.findData(current) if current is not None else -1
        self.saved.setCurrentIndex(max(row, 0) if saved else -1)  # with a placeholder, Qt selects nothing itself
        self._update_controls()

    def _reopen_chosen(self) -> None:
        row = self.saved.currentIndex()
        if 0 <= row < len(self._saved) and not self.busy:
            self._spawn(self.reopen(self._saved[row].folder))

    async def reopen(self, folder: Path) -> None:
        """Show the comparison saved in ``folder`` again (read in a worker thread)."""
        try:
            comparison = await asyncio.to_thread(load_comparison, folder)
        except TinyAgentError as error:
            self.status.setText(str(error))
            return
        if self.running:
            return
        self._show_comparison(comparison)
        self.prompt.setPlainText(comparison.prompt)
        missing = self._restore_setup(comparison)
        copies = "its copies were removed" if comparison.copies_removed else "its copies are still there"
        kept = f"; run {comparison.kept + 1} was kept" if comparison.kept is not None else ""
        gone = (
            f" {missing} of its models cannot be run again here: their provider is no longer configured."
            if missing
            else ""
        )
        self.status.setText(f"Reopened the comparison of {_when(comparison)} ({copies}{kept}).{gone}")

    def _restore_setup(self, comparison: Comparison) -> int:
        """Put the reopened comparison's models and allowed tools back, ready to run it again; returns how many of
        its models could not be put back."""
        for name, box in self.tool_boxes.items():
            box.setChecked(name in comparison.allowed)
        if self._entry_for is None:
            return 0
        entries = [self._entry_for(report.contender) for report in comparison.reports]
        self._models.clear()
        self.models.clear()
        for entry in entries:
            if entry is not None:
                self.add_model(entry)
        self._update_controls()
        return entries.count(None)

    def _show_comparison(self, comparison: Comparison) -> None:
        self._comparison = comparison
        self.table_model.set_reports(comparison.reports)
        self.table.setCurrentIndex(self.table_model.index(0, 0))
        self._show_diff()
        self._update_controls()

    def _spawn(self, work: Coroutine[Any, Any, None], *, busy: bool = True) -> None:
        """Run ``work`` on the loop; ``busy``: it changes the comparison (keep, discard, reopen), so other such
        work and a new compare wait until it is done."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if busy:
            self._work = task
            self._update_controls()
        task.add_done_callback(lambda _task: self._update_controls())

    def add_model(self, entry: ModelEntry) -> None:
        """Add ``entry`` to the models to compare (at most four, no duplicates)."""
        if len(self._models) >= MAX_CONTENDERS or any(
            (m.profile_id, m.model) == (entry.profile_id, entry.model) for m in self._models
        ):
            return
        self._models.append(entry)
        priced = entry.rates.source not in (None, "local")
        item = QListWidgetItem(f"{entry.label} — {entry.price_text}" + (" per M tokens" if priced else ""))
        item.setToolTip(entry.rates.detail)
        self.models.addItem(item)
        self._update_controls()
        self.model_added.emit(entry)

    def start(self) -> None:
        """Start the compare with the prompt, models and tools chosen."""
        prompt = self.prompt.toPlainText()
        if self.busy or not prompt.strip() or not MIN_CONTENDERS <= len(self._models) <= MAX_CONTENDERS:
            return
        allowed = [name for name, box in self.tool_boxes.items() if box.isChecked()]
        run = self._start(prompt, list(self._models), allowed, self.table_model.row_changed)
        if run is None:
            return
        self._run = run
        self._show_comparison(run.comparison)
        self.status.setText(f"Running {len(run.reports)} models; copies in {run.folder}. Esc stops them all.")
        self._task = asyncio.ensure_future(run.run())
        self._task.add_done_callback(self._finished)
        self._update_controls()
        self.running_changed.emit(True)

    def cancel(self) -> None:
        """Stop every run of the compare (Esc)."""
        if self._run is not None and self.running:
            self._run.cancel()
            self.status.setText("Stopping every run…")

    async def wait(self) -> None:
        """Wait until the compare ends (tests, shutdown)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def _finished(self, task: asyncio.Task[list[RunReport]]) -> None:
        if task.cancelled() or task.exception() is not None:
            _log.warning("compare run failed: %r", None if task.cancelled() else task.exception())
        reports = self._run.reports if self._run is not None else []
        done = sum(1 for report in reports if report.status == "completed")
        self.status.setText(f"{done} of {len(reports)} runs completed. Double-click a run to open its session.")
        for row in range(len(reports)):
            self.table_model.row_changed(row)
        self._show_diff()
        self._update_controls()
        self.running_changed.emit(False)
        self._spawn(self.refresh_saved(), busy=False)

    def _remove_model(self) -> None:
        row = self.models.currentRow()
        if 0 <= row < len(self._models) and not self.running:
            del self._models[row]
            self.models.takeItem(row)
        self._update_controls()

    def _selected(self) -> RunReport | None:
        return self.table_model.report(self.table.currentIndex().row())

    def _show_diff(self) -> None:
        report = self._selected()
        if report is None:
            self.diff.clear()
            return
        if not report.ended:
            self.diff.setPlainText("The changes are shown when this run ends.")
        else:
            skipped = "".join(f"# not copied: {item}\n" for item in (report.copy.skipped if report.copy else ()))
            if report.copy is not None:
                where = f"# in {report.copy.path}\n"
            else:
                where = "# its copy was removed; the changes as saved with the comparison\n"
            changes = changes_diff(report.changes) or "No files changed.\n"
            self.diff.setPlainText(f"# {_summary(report)}\n{where}{skipped}\n{changes}")
        self._update_controls()

    def _ask_keep(self) -> None:
        """Approval first: the files the selected run changed, and where they go."""
        report = self._selected()
        if report is None or report.copy is None or not report.changes or self.busy:
            return
        files = "\n".join(
            f"{change.status} {change.path} (+{change.added} −{change.removed})" for change in report.changes
        )
        answer = QMessageBox.question(
            self,
            "Keep This One",
            f"Apply the changes of {report.contender.label} to {report.copy.original}?\n\n{files}\n\n"
            "Then every run's copy is removed (the sessions are kept).",
        )
        if answer == QMessageBox.StandardButton.Yes:
            self._spawn(self.keep(report))

    async def keep(self, report: RunReport) -> None:
        """Apply ``report``'s changes to the original workspace (approved) and remove every copy; the status line
        says how it went."""
        comparison = self._comparison
        copy = report.copy
        if comparison is None or copy is None or report not in comparison.reports:
            return
        self.keep_button.setEnabled(False)
        try:
            await asyncio.to_thread(keep_run, comparison, comparison.reports.index(report))
        except (TinyAgentError, OSError) as error:
            applied = comparison.kept is not None
            self.status.setText(
                f"The copies could not all be removed: {error}" if applied else f"The changes were not applied: {error}"
            )
        else:
            self.status.setText(
                f"Applied the changes of {report.contender.label} to {copy.original}; the copies were removed."
            )
        finally:
            self._show_diff()
        await self.refresh_saved()

    async def discard(self) -> None:
        """Remove every run's copy of the shown comparison (the sessions and diffs stay)."""
        comparison = self._comparison
        if comparison is None or self.running or all(report.copy is None for report in comparison.reports):
            return
        try:
            await asyncio.to_thread(discard_copies, comparison)
        except TinyAgentError as error:
            self.status.setText(str(error))
        else:
            self.status.setText("Removed the copies of this comparison; its sessions and diffs are kept.")
        finally:
            self._show_diff()
        await self.refresh_saved()

    def _open_session(self) -> None:
        report = self._selected()
        if report is not None and report.session_path is not None and not self.running:
            self.session_requested.emit(Path(report.session_path))

    def _update_controls(self) -> None:
        running = self.running
        busy = self.busy
        count = len(self._models)
        self.add_button.setEnabled(not running and count < MAX_CONTENDERS)
        self.remove_button.setEnabled(not running and count > 0)
        self.start_button.setEnabled(not busy and MIN_CONTENDERS <= count <= MAX_CONTENDERS)
        self.stop_button.setEnabled(running)
        self.reopen_button.setEnabled(not busy and self.saved.count() > 0)
        selected = self._selected()
        self.open_button.setEnabled(not running and selected is not None and selected.session_path is not None)
        self.keep_button.setEnabled(
            not busy and selected is not None and selected.copy is not None and bool(selected.changes)
        )
        comparison = self._comparison
        self.discard_button.setEnabled(
            not busy and comparison is not None and any(report.copy is not None for report in comparison.reports)
        )
        self.prompt.setReadOnly(running)
        for box in self.tool_boxes.values():
            box.setEnabled(not running)
        if not running and self._comparison is None:
            self.status.setText(f"Add {MIN_CONTENDERS}–{MAX_CONTENDERS} models and a prompt, then Start Compare.")
