"""The right pane: a trace viewer. With nothing selected, the session's waterfall; else the selected call or step.

:meth:`InspectorPane.show_item` takes a timeline item (or ``None`` for the waterfall). For a tool call it shows the
outcome (the core's: ``exit 1``, ``denied: <reason>``, …), arguments (pretty JSON and the model's raw string), the
result, the diff of an edit or write (Changes), timing, the replay policy and the step that produced it; for a step
(an assistant message, a compaction, a failed operation's notice) the message rendered as Markdown, the model,
stop reason, usage, cost and its source, latency, time to first token, HTTP status and the answering model, dialect
repairs (the answer's) beside the outbound repairs (the request's: ``tool_choice_auto``, ``tools_not_streamed``,
``tool_call_content_empty_string``), the context window used, and dropped provider fields. Outbound repairs and the
context window come with the live step (:meth:`InspectorPane.note_step`); for a step of a reopened session the
outbound repairs come from its raw capture (once loaded), and the context window, which nothing records, says "not
recorded". The raw wire request and response (the Wire tab, one above
the other, as text or as collapsible JSON trees, with "Copy as cURL") come from the ledger's capture, loaded on demand
through ``load_captures`` when the Step or Wire tab is first shown for that step; they are formatted by the core
(:mod:`tiny_agent_core.wire_view`), never parsed here. Every text wraps; Ctrl+F searches the section shown. A click
(or Enter) on a waterfall row shows what it stands for and emits :attr:`InspectorPane.row_requested` so the window
can select it in the transcript; "Waterfall" (or Esc) goes back.

A call of an MCP tool (``mcp:<alias>/<tool>``) also has an MCP tab: the server's alias and kind (stdio or HTTP),
the tool, the duration, and the raw ``tools/call`` request and the server's response as JSON trees, as the window
kept them (:class:`~tiny_agent_core.mcp.exchanges.McpExchange`, through ``load_exchange``: bounded, masked, only for
calls made in this window; a reopened session's call says the exchange was not kept).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication, QKeyEvent, QKeySequence, QTextDocument
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.agent.events import StepFinished
from tiny_agent_core.mcp.exchanges import McpExchange
from tiny_agent_core.mcp.names import display_name, parse_function_name, shown_name
from tiny_agent_core.timeline import AssistantItem, CompactionItem, NoticeItem, StepInfo, Timeline, ToolItem, UserItem
from tiny_agent_core.timestamps import utc_datetime
from tiny_agent_core.wire_view import CaptureAnswer, capture_answer, capture_text, capture_values, curl_command
from tiny_agent_gui.json_tree import JsonTree
from tiny_agent_gui.transcript.model import tool_state
from tiny_agent_gui.transcript.render import tint_diff
from tiny_agent_gui.waterfall import WaterfallPane

CaptureLoader = Callable[[str], Sequence[Any]]
"""``attempt id → stored captures`` (e.g. ``lambda a: ledger.raw_captures(conn, a)``)."""

ExchangeLoader = Callable[[str], McpExchange | None]
"""``call id → the raw MCP exchange`` the window kept for it (``McpExchanges.get``), or ``None``."""

UNKNOWN = "unknown"
NOT_RECORDED = "not recorded"

REFRESH_MS = 500
"""The waterfall follows a live run at most this often (a run changes the timeline many times a second; the
trace of a 5,000-message session takes ~20 ms to build, benchmarks/trace_build.py)."""

_RESULT_WORDS = {
    "pending": "pending (not started)",
    "running": "running (started, no result yet)",
    "success": "success",
    "error": "error",
    "interrupted": "synthetic: interrupted (execution status unknown after a crash or abort; not replayed)",
    "aborted": "synthetic: aborted before execution",
    "invalidArguments": "synthetic: invalid arguments (not executed)",
    "unknownTool": "synthetic: unknown tool (not executed)",
    "truncated": "synthetic: arguments truncated by the output token limit (not executed)",
}


def _time(ms: int | None) -> str:
    if ms is None:
        return UNKNOWN
    return utc_datetime(ms).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _ms(value: int | None) -> str:
    return NOT_RECORDED if value is None else f"{value} ms"


def step_text(
    step: StepInfo,
    answer: CaptureAnswer | None = None,
    outbound: tuple[str, ...] | None = None,
    window: int | None = None,
) -> str:
    """The step's facts as ``label: value`` lines (unknown values say so, never 0).

    ``answer`` is what the raw capture says (HTTP status, answering model) when the ledger row does not;
    ``outbound`` the outbound repairs applied to the request (from the live step or the raw capture) and ``window``
    the model's context window (known only for a step seen live); ``None``: not recorded / unknown.
    """
    usage = step.usage
    if usage is None:
        usage_lines = ["usage: unknown (the provider reported none)"]
    else:
        rate = usage.cache_hit_rate
        usage_lines = [
            f"usage: input {usage.input:,} · output {usage.output:,} · cache read {usage.cache_read:,} · "
            f"cache write {usage.cache_write:,}",
            f"cache hit rate: {'n/a' if rate is None else f'{rate:.1%}'}",
        ]
    if step.cost is None:
        cost = f"cost: {UNKNOWN}"
    else:
        source = step.cost_source or UNKNOWN
        if step.price_data_version:
            source += f" (price data {step.price_data_version})"
        cost = f"cost: ${step.cost} (source: {source})"
    status = step.http_status if step.http_status is not None else (answer.http_status if answer else None)
    answered = step.response_model or (answer.model if answer else None)
    prompt = usage.prompt if usage is not None else None
    if window is None:
        context = f"context: {UNKNOWN} window"
    elif prompt is None:
        context = f"context: prompt size {UNKNOWN} of a {window:,}-token window"
    else:
        context = f"context: {prompt:,} of {window:,} tokens ({prompt / window:.0%})"
    lines = [
        f"model: {step.model}",
        f"answered by: {answered or NOT_RECORDED}",
        f"step: {step.step_id} ({step.step_kind}, attempt {step.attempt}, {step.status})",
        f"attempt id: {step.attempt_id}",
        f"stop reason: {step.stop_reason or '—'}",
        *usage_lines,
        context,
        cost,
        f"started: {_time(step.started_at)}",
        f"latency: {_ms(step.latency_ms)}",
        f"time to first token: {_ms(step.ttft_ms)}",
        f"HTTP status: {status if status is not None else NOT_RECORDED}",
        "dialect repairs: "
        + (NOT_RECORDED if step.repairs is None else (", ".join(step.repairs) if step.repairs else "none")),
        "outbound repairs: " + (NOT_RECORDED if outbound is None else (", ".join(outbound) if outbound else "none")),
        "dropped provider fields: "
        + (NOT_RECORDED if step.dropped is None else (", ".join(step.dropped) if step.dropped else "none")),
    ]
    if step.error is not None:
        lines.append(f"error: {step.error.code}: {step.error.message}")
    if step.error_kind:
        lines.append(f"provider error kind: {step.error_kind}")
    return "\n".join(lines)


def tool_text(item: ToolItem) -> str:
    """The call's outcome, summary, timing and replay policy as ``label: value`` lines."""
    lines = [
        f"tool: {shown_name(item.name)}",
        f"summary: {item.summary}",
        f"outcome: {tool_state(item)}",
        f"recorded result: {_RESULT_WORDS.get(item.status, 'synthetic: ' + item.status)}",
        f"call id: {item.call_id}",
        f"started: {_time(item.started_at) if item.started_at is not None else 'never started'}",
        f"finished: {_time(item.finished_at) if item.finished_at is not None else '—'}",
        f"duration: {_ms(item.duration_ms) if item.started_at is not None else '—'}",
        f"replay: {item.replay or '—'}" + (f" (key {item.replay_key})" if item.replay_key else ""),
    ]
    diff = item.diff
    if diff is not None:
        lines.append(f"changes: {diff.path} {diff.stat}")
    if item.arguments_edited:
        lines.append("arguments: edited before execution (the executed arguments differ from the model's)")
    return "\n".join(lines)


def mcp_text(item: ToolItem, exchange: McpExchange | None) -> str:
    """The MCP call's server, kind, tool and duration as ``label: value`` lines ("" for a tool that is not MCP)."""
    parsed = parse_function_name(item.name)
    if parsed is None:
        return ""
    alias, tool = parsed
    if exchange is None:
        return "\n".join(
            [
                f"tool: {display_name(alias, tool)}",
                f"server: {alias}",
                f"kind: {UNKNOWN}",
                f"duration: {_ms(item.duration_ms) if item.started_at is not None else '—'}",
                "raw exchange: not kept (only calls made in this window keep their raw request and response)",
            ]
        )
    lines = [
        f"tool: {exchange.display_name}",
        f"server: {exchange.call.alias}",
        f"kind: {'Streamable HTTP' if exchange.kind == 'http' else 'stdio (local program)'}",
        f"started: {_time(exchange.call.started_at_ms)}",
        f"duration: {exchange.call.duration_ms} ms",
    ]
    if exchange.call.error is not None:
        lines.append(f"no result: {exchange.call.error}")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Overview:
    """What the Overview tab shows for an item, and the model step behind it (if any)."""

    text: str
    step: StepInfo | None = None
    markdown: bool = False


def _mono_box(name: str) -> QPlainTextEdit:
    box = QPlainTextEdit()
    box.setReadOnly(True)
    box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    box.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    box.setAccessibleName(name)
    return box


class InspectorPane(QWidget):
    """The waterfall of the session, or the details of the selected tool call or step in read-only tabs.

    ``timeline`` resolves the step of a tool call and feeds the waterfall; ``load_captures`` fetches a step's raw
    wire captures (none shown without it). Both can be set later (:meth:`set_timeline`, :meth:`set_capture_loader`).
    """

    row_requested = Signal(int)
    """A waterfall row was activated: the timeline index of its item (the window can select it in the transcript)."""

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        timeline: Timeline | None = None,
        load_captures: CaptureLoader | None = None,
        load_exchange: ExchangeLoader | None = None,
    ) -> None:
        """An inspector showing the waterfall of ``timeline`` (empty without one)."""
        super().__init__(parent)
        self.setAccessibleName("Inspector")
        self._timeline: Timeline | None = None
        self._load_captures = load_captures
        self._load_exchange = load_exchange
        self._item: object = None
        self._raw_attempt: str | None = None
        self._raw_loaded_for: str | None = None
        self._step: StepInfo | None = None
        self._captures: list[Any] = []
        """The raw captures of the step shown, once loaded."""
        self._live: dict[str, tuple[tuple[str, ...], int | None]] = {}
        """Attempt id → (outbound repairs, context window) of the steps seen live (not recorded elsewhere)."""
        self._stale = False
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.timeout.connect(self._refresh_waterfall)

        self.title = QLabel()
        """What is shown."""
        self.title.setAccessibleName("Inspector title")
        self.title.setWordWrap(True)
        self.back = QPushButton("◂ Waterfall")
        """Back to the session's waterfall (Esc)."""
        self.back.setAccessibleName("Back to the waterfall")
        self.back.setToolTip("Show the whole session as a waterfall again (Esc)")
        self.back.clicked.connect(lambda: self.show_item(None))
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.title, 1)
        header.addWidget(self.back, 0, Qt.AlignmentFlag.AlignTop)

        self.waterfall = WaterfallPane()
        """The session's trace, shown when nothing is selected."""
        self.waterfall.row_activated.connect(self._row_activated)
        self.tabs = QTabWidget()
        """Overview, Arguments, Result, Changes, Step, Wire (only those that apply are shown)."""
        self.tabs.setAccessibleName("Inspector sections")
        self.tabs.setToolTip("Ctrl+Tab / Ctrl+Shift+Tab switch sections; Ctrl+F searches")
        self.tabs.setUsesScrollButtons(True)
        self.overview = QTextEdit()
        self.overview.setReadOnly(True)
        self.overview.setAccessibleName("Overview")
        self.arguments = _mono_box("Arguments")
        self.result = _mono_box("Result")
        self.changes = _mono_box("Changes")
        self.step = _mono_box("Step")
        self.request = _mono_box("Request")
        self.response = _mono_box("Response")
        self.curl = QPushButton("Copy as c&URL")
        """Copies the request as a curl command (the key as ``$API_KEY``)."""
        self.curl.setAccessibleName("Copy the request as a curl command")
        self.curl.setToolTip("The API key is never in it: the command reads it from $API_KEY")
        self.curl.clicked.connect(self._copy_curl)
        self.request_tree = JsonTree("Request body as a tree")
        self.response_tree = JsonTree("Response body as a tree")
        self.tree_toggle = QPushButton("JSON &tree")
        """Shows the bodies as collapsible JSON trees instead of text (Alt+T)."""
        self.tree_toggle.setCheckable(True)
        self.tree_toggle.setAccessibleName("Show the bodies as JSON trees")
        self.tree_toggle.toggled.connect(self._show_trees)
        self._request_stack = QStackedWidget()
        self._request_stack.addWidget(self.request)
        self._request_stack.addWidget(self.request_tree)
        self._response_stack = QStackedWidget()
        self._response_stack.addWidget(self.response)
        self._response_stack.addWidget(self.response_tree)
        request_page = QWidget()
        request_page.setAccessibleName("Request")
        request_layout = QVBoxLayout(request_page)
        request_layout.setContentsMargins(0, 0, 0, 0)
        buttons = QHBoxLayout()
        buttons.addWidget(QLabel("Request"), 1)
        buttons.addWidget(self.tree_toggle)
        buttons.addWidget(self.curl)
        request_layout.addLayout(buttons)
        request_layout.addWidget(self._request_stack, 1)
        response_page = QWidget()
        response_page.setAccessibleName("Response")
        response_layout = QVBoxLayout(response_page)
        response_layout.setContentsMargins(0, 0, 0, 0)
        response_layout.addWidget(QLabel("Response"))
        response_layout.addWidget(self._response_stack, 1)
        self.wire = QSplitter(Qt.Orientation.Vertical)
        """The raw wire: the request above, the response below."""
        self.wire.setAccessibleName("Raw wire")
        self.wire.addWidget(request_page)
        self.wire.addWidget(response_page)
        self.mcp_summary = _mono_box("MCP call")
        self.mcp_request = JsonTree("MCP request as a tree")
        self.mcp_response = JsonTree("MCP response as a tree")
        self.mcp = QSplitter(Qt.Orientation.Vertical)
        """An MCP call: server, kind, tool, duration, the raw request and response."""
        self.mcp.setAccessibleName("MCP call")
        self.mcp.addWidget(self.mcp_summary)
        for tree, label in (
            (self.mcp_request, "Request (tools/call params)"),
            (self.mcp_response, "Response (as the server sent it)"),
        ):
            part = QWidget()
            part_layout = QVBoxLayout(part)
            part_layout.setContentsMargins(0, 0, 0, 0)
            part_layout.addWidget(QLabel(label))
            part_layout.addWidget(tree, 1)
            self.mcp.addWidget(part)
        self._pages: dict[str, QWidget] = {}
        for widget, label in (
            (self.overview, "Overview"),
            (self.arguments, "Arguments"),
            (self.result, "Result"),
            (self.changes, "Changes"),
            (self.step, "Step"),
            (self.wire, "Wire"),
            (self.mcp, "MCP"),
        ):
            self.tabs.addTab(widget, label)
            self._pages[label] = widget
        self.tabs.currentChanged.connect(self._tab_changed)

        self.search = QLineEdit()
        """Ctrl+F: find text in the section shown (Enter: next, Shift+Enter: previous, Esc: close)."""
        self.search.setAccessibleName("Search the inspector")
        self.search.setPlaceholderText("Find in this section (Enter: next, Shift+Enter: previous, Esc: close)")
        self.search.setClearButtonEnabled(True)
        self.search.returnPressed.connect(lambda: self.find_next(self.search.text()))
        self.search.installEventFilter(self)
        self.search.hide()
        details = QWidget()
        details_layout = QVBoxLayout(details)
        details_layout.setContentsMargins(0, 0, 0, 0)
        details_layout.addWidget(self.search)
        details_layout.addWidget(self.tabs, 1)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.waterfall)
        self.stack.addWidget(details)
        self._details = details
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(header)
        layout.addWidget(self.stack, 1)
        self.set_timeline(timeline)

    # --- the timeline --------------------------------------------------------------------------------------------

    def set_timeline(self, timeline: Timeline | None) -> None:
        """Show ``timeline`` (the open session): its waterfall, kept current as it changes."""
        if self._timeline is not None:
            self._timeline.remove_listener(self)
        self._timeline = timeline
        if timeline is not None:
            timeline.add_listener(self)
        self.waterfall.set_timeline(None)
        self.show_item(None)
        if timeline is not None:  # built after the transcript's first paint, not before it
            self._stale = True
            self._refresh_timer.start(0)

    def on_inserting(self, index: int, count: int) -> None:
        """Timeline listener: nothing to do before rows arrive."""

    def on_inserted(self, index: int, count: int) -> None:
        """Timeline listener: refresh the waterfall soon."""
        self._schedule_refresh()

    def on_changed(self, index: int) -> None:
        """Timeline listener: refresh the waterfall soon (and the item shown, if it is the one that changed)."""
        self._schedule_refresh()
        if self._timeline is not None and isinstance(self._item, ToolItem | AssistantItem):
            changed = self._timeline.items[index]
            if type(changed) is type(self._item) and _same(changed, self._item):
                self.show_item(changed)

    def _schedule_refresh(self) -> None:
        self._stale = True
        if self.stack.currentWidget() is self.waterfall and not self._refresh_timer.isActive():
            self._refresh_timer.start(REFRESH_MS)

    def _refresh_waterfall(self) -> None:
        if not self._stale or self.stack.currentWidget() is not self.waterfall:
            return  # shown again (and rebuilt) when the waterfall comes back
        self._stale = False
        self.waterfall.set_timeline(self._timeline)

    def set_capture_loader(self, load_captures: CaptureLoader | None) -> None:
        """Load raw wire captures with ``load_captures`` from now on."""
        self._load_captures = load_captures
        self._raw_loaded_for = None
        self._tab_changed(self.tabs.currentIndex())

    def current_item(self) -> object:
        """The item shown (``None`` while the waterfall is shown)."""
        return self._item

    # --- showing -------------------------------------------------------------------------------------------------

    def show_item(self, item: object) -> None:
        """Show a timeline item (a tool call, an assistant step, a compaction, a notice, a user message), or the
        waterfall for ``None``."""
        self._item = item
        if item is None:
            self._show_waterfall()
            return
        self.back.show()
        self.stack.setCurrentWidget(self._details)
        self._clear_details()
        overview = self._overview(item)
        if overview.markdown:
            self.overview.setMarkdown(overview.text)
        else:
            self.overview.setPlainText(overview.text)
        step = overview.step
        self._step = step
        self.step.setPlainText(self._step_text(step) if step is not None else "No model step.")
        self._show_tabs(isinstance(item, ToolItem), step)
        self._raw_attempt = step.attempt_id if step is not None else None
        self._raw_loaded_for = None
        self._captures = []
        self.curl.setEnabled(False)
        self._tab_changed(self.tabs.currentIndex())

    def _show_waterfall(self) -> None:
        self.title.setText("The session as a waterfall: click a request or a tool call to inspect it.")
        self.back.hide()
        self.search.hide()
        self.stack.setCurrentWidget(self.waterfall)
        if self._stale:
            self._refresh_waterfall()

    def _clear_details(self) -> None:
        for box in (
            self.arguments,
            self.result,
            self.changes,
            self.step,
            self.request,
            self.response,
            self.mcp_summary,
        ):
            box.clear()
        for tree in (self.request_tree, self.response_tree, self.mcp_request, self.mcp_response):
            tree.set_value(None)

    def _overview(self, item: object) -> _Overview:
        """Title the pane for ``item`` (filling a tool call's own tabs); what its Overview tab says."""
        if isinstance(item, ToolItem):
            return self._show_tool(item)
        if isinstance(item, AssistantItem):
            self.title.setText(f"Step: {item.step.model} — {item.step.stop_reason or item.step.status}")
            calls = "\n".join(f"- `{call.name}` {call.call_id}" for call in item.calls)
            text = (item.text or "*(no text)*") + (f"\n\n**Tool calls**\n\n{calls}" if calls else "")
            return _Overview(text, item.step, markdown=True)
        if isinstance(item, CompactionItem):
            self.title.setText("Compaction")
            text = f"{item.compacted} messages summarized, {item.retained} kept verbatim.\n\n{item.summary}"
            return _Overview(text, item.step, markdown=True)
        if isinstance(item, NoticeItem):
            self.title.setText(f"Operation {item.kind}")
            return _Overview(f"{item.text}\ncode: {item.code or '—'}\noperation: {item.operation_id}", item.step)
        if isinstance(item, UserItem):
            self.title.setText("User message")
            return _Overview(item.text)
        self.title.setText("Streaming…")
        return _Overview("The answer is still streaming; select it again once it is complete.")

    def _show_tool(self, item: ToolItem) -> _Overview:
        """Fill a tool call's Arguments, Result, Changes and MCP tabs; its overview and the step that made it."""
        self.title.setText(f"Tool call: {item.summary}")
        self.arguments.setPlainText(self._arguments_text(item))
        words = _RESULT_WORDS.get(item.status, item.status)
        self.result.setPlainText(f"{tool_state(item)} ({words})\n\n{item.result_text or ''}")
        diff = item.diff
        if diff is not None:
            self.changes.setPlainText(diff.text)
            tint_diff(self.changes.document())
        self._show_mcp(item)
        step = self._timeline.step(item.step_id) if self._timeline is not None else None
        return _Overview(tool_text(item), step)

    def _show_tabs(self, is_tool: bool, step: StepInfo | None) -> None:
        """Show the tabs that have something to say for the item (the first one if the current tab is hidden)."""
        for label, shown in (
            ("Arguments", is_tool),
            ("Result", is_tool),
            ("Changes", is_tool and not self.changes.document().isEmpty()),
            ("Step", step is not None),
            ("Wire", step is not None),
            ("MCP", is_tool and not self.mcp_summary.document().isEmpty()),
        ):
            self.tabs.setTabVisible(self.tabs.indexOf(self._pages[label]), shown)
        if not self.tabs.isTabVisible(self.tabs.currentIndex()):
            self.tabs.setCurrentIndex(0)

    def show_mcp(self) -> None:
        """Bring the MCP tab forward (when the shown call is an MCP call)."""
        if self.tabs.isTabVisible(self.tabs.indexOf(self.mcp)):
            self.tabs.setCurrentWidget(self.mcp)

    def _show_mcp(self, item: ToolItem) -> None:
        """Fill the MCP tab for an MCP call (left empty, so hidden, for any other tool)."""
        if parse_function_name(item.name) is None:
            return
        exchange = self._load_exchange(item.call_id) if self._load_exchange is not None else None
        self.mcp_summary.setPlainText(mcp_text(item, exchange))
        if exchange is not None:
            request = exchange.request_value()
            response = exchange.response_value()
            self.mcp_request.set_value(request if request is not None else exchange.call.request)
            if response is not None or exchange.call.response:
                self.mcp_response.set_value(response if response is not None else exchange.call.response)

    def note_step(self, event: StepFinished) -> None:
        """Keep what only the live step says (its outbound repairs and context window) for the Step tab."""
        self._live[event.attempt_id] = (tuple(event.outbound_repairs), event.context_window)

    def _step_text(self, step: StepInfo, answer: CaptureAnswer | None = None) -> str:
        outbound, window = self._live.get(step.attempt_id, (None, None))
        if outbound is None and answer is not None:
            outbound = answer.outbound_repairs
        return step_text(step, answer, outbound, window)

    def show_changes(self) -> None:
        """Bring the Changes tab forward (when the shown call has a diff)."""
        if self.tabs.isTabVisible(self.tabs.indexOf(self.changes)):
            self.tabs.setCurrentWidget(self.changes)

    def append_live_output(self, call_id: str, text: str) -> None:
        """Output a running tool just produced: appended to the Result section when that call is shown."""
        item = self._item
        if isinstance(item, ToolItem) and item.call_id == call_id and not item.finished:
            cursor = self.result.textCursor()
            cursor.movePosition(cursor.MoveOperation.End)
            cursor.insertText(text)
            self.result.ensureCursorVisible()

    @staticmethod
    def _arguments_text(item: ToolItem) -> str:
        pretty = (
            json.dumps(item.arguments, indent=2, ensure_ascii=False)
            if item.arguments is not None
            else "(the model's arguments are not a JSON object)"
        )
        heading = "executed arguments (edited at approval)" if item.arguments_edited else "arguments"
        return f"{heading}:\n{pretty}\n\nraw string from the model:\n{item.arguments_text}"

    def _row_activated(self, index: int) -> None:
        if self._timeline is None or not 0 <= index < len(self._timeline.items):
            return
        self.show_item(self._timeline.items[index])
        self.row_requested.emit(index)

    # --- raw wire ------------------------------------------------------------------------------------------------

    def _tab_changed(self, _index: int) -> None:
        if self.tabs.currentWidget() in (self.step, self.wire):
            self._load_raw()

    def _load_raw(self) -> None:
        attempt_id = self._raw_attempt
        if attempt_id is None or self._raw_loaded_for == attempt_id:
            return
        self._raw_loaded_for = attempt_id
        self._captures = []
        if self._load_captures is None:
            self.request.setPlainText("Raw wire captures are not available here.")
            self.response.setPlainText("Raw wire captures are not available here.")
            return
        try:
            captures = list(self._load_captures(attempt_id))
        except Exception as error:  # a ledger failure must not break the pane
            self.request.setPlainText(f"Could not load the raw wire capture: {error}")
            self.response.setPlainText(f"Could not load the raw wire capture: {error}")
            return
        if not captures:
            self.request.setPlainText("No raw wire capture was recorded for this request.")
            self.response.setPlainText("No raw wire capture was recorded for this request.")
            return
        self._captures = captures
        if self._step is not None:
            self.step.setPlainText(self._step_text(self._step, capture_answer(captures)))
        requests, responses = [], []
        for number, capture in enumerate(captures, 1):
            text = capture_text(capture)
            header = f"=== capture {number} of {len(captures)} ===\n" if len(captures) > 1 else ""
            requests.append(header + text.request)
            responses.append(header + text.response)
        self.request.setPlainText("\n\n".join(requests))
        self.response.setPlainText("\n\n".join(responses))
        self.curl.setEnabled(curl_command(captures[-1]) is not None)
        if self.tree_toggle.isChecked():
            self._fill_trees()

    def _show_trees(self, trees: bool) -> None:
        self._request_stack.setCurrentIndex(1 if trees else 0)
        self._response_stack.setCurrentIndex(1 if trees else 0)
        if trees:
            self._fill_trees()

    def _fill_trees(self) -> None:
        """The last capture's bodies as trees (built only while the trees are shown)."""
        values = capture_values(self._captures[-1]) if self._captures else None
        self.request_tree.set_value(values.request if values is not None else None)
        self.response_tree.set_value(values.response if values is not None else None)

    def _copy_curl(self) -> None:
        command = curl_command(self._captures[-1]) if self._captures else None
        if command is not None:
            QGuiApplication.clipboard().setText(command)

    # --- search --------------------------------------------------------------------------------------------------

    def _section(self) -> QPlainTextEdit | QTextEdit:
        current = self.tabs.currentWidget()
        if current is self.wire:
            return self.response if self.response.hasFocus() else self.request
        assert isinstance(current, QPlainTextEdit | QTextEdit)
        return current

    def open_search(self) -> None:
        """Show the search field and focus it (Ctrl+F)."""
        if self.stack.currentWidget() is not self._details:
            return
        self.search.show()
        self.search.setFocus()
        self.search.selectAll()

    def find_next(self, text: str, *, backward: bool = False) -> bool:
        """Select the next (or previous) occurrence of ``text`` in the section shown, wrapping around."""
        if not text:
            return False
        box = self._section()
        flags = QTextDocument.FindFlag.FindBackward if backward else QTextDocument.FindFlag(0)
        if box.find(text, flags):
            return True
        cursor = box.textCursor()
        cursor.movePosition(cursor.MoveOperation.End if backward else cursor.MoveOperation.Start)
        box.setTextCursor(cursor)
        return box.find(text, flags)

    def event(self, event: QEvent) -> bool:
        """Ctrl+F inside the inspector searches it (outside, it stays the window's session search)."""
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and event.matches(QKeySequence.StandardKey.Find)
            and self.stack.currentWidget() is self._details
        ):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Ctrl+F opens the search; Esc goes back to the waterfall."""
        if event.matches(QKeySequence.StandardKey.Find):
            self.open_search()
            return
        if event.key() == Qt.Key.Key_Escape and self._item is not None:
            self.show_item(None)
            self.waterfall.view.setFocus()
            return
        super().keyPressEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """In the search field: Esc closes it, Shift+Enter finds backwards."""
        if watched is self.search and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            if event.key() == Qt.Key.Key_Escape:
                self.search.hide()
                self.tabs.currentWidget().setFocus()
                return True
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and (
                event.modifiers() & Qt.KeyboardModifier.ShiftModifier
            ):
                self.find_next(self.search.text(), backward=True)
                return True
        return super().eventFilter(watched, event)


def _same(a: object, b: object) -> bool:
    """Whether two versions of a timeline item stand for the same call or message."""
    if isinstance(a, ToolItem) and isinstance(b, ToolItem):
        return a.call_id == b.call_id
    if isinstance(a, AssistantItem) and isinstance(b, AssistantItem):
        return a.entry_id == b.entry_id
    return False
