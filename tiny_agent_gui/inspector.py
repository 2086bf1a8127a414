"""The right pane: everything about the selected tool call or model step, read-only.

:meth:`InspectorPane.show_item` takes a timeline item (or ``None``). For a tool call it shows the arguments (pretty
JSON and the model's raw string), the result (success / error / synthetic reason), timing, the replay policy and
the step that produced it; for a step (an assistant message, a compaction, a failed operation's notice) the
model, stop reason, usage, cost and its source, latency, time to first token, HTTP status, dialect repairs and
dropped provider fields. The raw wire request and response come from the ledger capture, loaded on demand (when
the "Raw wire" tab is first shown for that step) through the ``load_captures`` callable; they are formatted by
the core (:func:`~tiny_agent_core.timeline.capture_text`), never parsed here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QTabWidget, QVBoxLayout, QWidget

from tiny_agent_core.timeline import (
    AssistantItem,
    CompactionItem,
    NoticeItem,
    StepInfo,
    Timeline,
    ToolItem,
    UserItem,
    capture_text,
)

CaptureLoader = Callable[[str], Sequence[Any]]
"""``attempt id → stored captures`` (e.g. ``lambda a: ledger.raw_captures(conn, a)``)."""

UNKNOWN = "unknown"

_RESULT_WORDS = {
    "pending": "pending (not started)",
    "running": "running (started, no result yet)",
    "success": "success",
    "error": "error (the tool reported a failure)",
    "interrupted": "synthetic: interrupted (execution status unknown after a crash or abort; not replayed)",
    "aborted": "synthetic: aborted before execution",
    "invalidArguments": "synthetic: invalid arguments (not executed)",
    "unknownTool": "synthetic: unknown tool (not executed)",
    "truncated": "synthetic: arguments truncated by the output token limit (not executed)",
}


def _time(ms: int | None) -> str:
    if ms is None:
        return UNKNOWN
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _ms(value: int | None) -> str:
    return UNKNOWN if value is None else f"{value} ms"


def step_text(step: StepInfo) -> str:
    """The step's facts as ``label: value`` lines (unknown values say "unknown", never 0)."""
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
    lines = [
        f"model: {step.model}",
        f"answered by: {step.response_model or UNKNOWN}",
        f"step: {step.step_id} ({step.step_kind}, attempt {step.attempt}, {step.status})",
        f"attempt id: {step.attempt_id}",
        f"stop reason: {step.stop_reason or '—'}",
        *usage_lines,
        cost,
        f"started: {_time(step.started_at)}",
        f"latency: {_ms(step.latency_ms)}",
        f"time to first token: {_ms(step.ttft_ms)}",
        f"HTTP status: {step.http_status if step.http_status is not None else UNKNOWN}",
        "dialect repairs: "
        + (UNKNOWN if step.repairs is None else (", ".join(step.repairs) if step.repairs else "none")),
        "dropped provider fields: "
        + (UNKNOWN if step.dropped is None else (", ".join(step.dropped) if step.dropped else "none")),
    ]
    if step.error is not None:
        lines.append(f"error: {step.error.code}: {step.error.message}")
    if step.error_kind:
        lines.append(f"provider error kind: {step.error_kind}")
    return "\n".join(lines)


def tool_text(item: ToolItem) -> str:
    """The call's status, timing and replay policy as ``label: value`` lines."""
    lines = [
        f"tool: {item.name}",
        f"call id: {item.call_id}",
        f"result: {_RESULT_WORDS.get(item.status, 'synthetic: ' + item.status)}",
        f"started: {_time(item.started_at) if item.started_at is not None else 'never started'}",
        f"finished: {_time(item.finished_at) if item.finished_at is not None else '—'}",
        f"duration: {_ms(item.duration_ms) if item.started_at is not None else '—'}",
        f"replay: {item.replay or '—'}" + (f" (key {item.replay_key})" if item.replay_key else ""),
    ]
    if item.arguments_edited:
        lines.append("arguments: edited before execution (the executed arguments differ from the model's)")
    return "\n".join(lines)


def _mono_box(name: str) -> QPlainTextEdit:
    box = QPlainTextEdit()
    box.setReadOnly(True)
    box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    box.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    box.setAccessibleName(name)
    return box


class InspectorPane(QWidget):
    """Details of the selected tool call or step, in read-only monospace tabs.

    ``timeline`` resolves the step of a tool call; ``load_captures`` fetches a step's raw wire captures (none
    shown without it). Both can be set later (:meth:`set_timeline`, :meth:`set_capture_loader`).
    """

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        timeline: Timeline | None = None,
        load_captures: CaptureLoader | None = None,
    ) -> None:
        """An empty inspector."""
        super().__init__(parent)
        self.setAccessibleName("Inspector")
        self._timeline = timeline
        self._load_captures = load_captures
        self._item: object = None
        self._raw_attempt: str | None = None
        self._raw_loaded_for: str | None = None
        self.title = QLabel("Select a tool call or a step to inspect it.")
        """What is shown."""
        self.title.setAccessibleName("Inspector title")
        self.title.setWordWrap(True)
        self.tabs = QTabWidget(self)
        """Overview, Arguments, Result, Step, Raw wire."""
        self.tabs.setAccessibleName("Inspector sections")
        self.tabs.setToolTip("Ctrl+Tab / Ctrl+Shift+Tab switch sections")
        self.overview = _mono_box("Overview")
        self.arguments = _mono_box("Arguments")
        self.result = _mono_box("Result")
        self.step = _mono_box("Step")
        self.raw = _mono_box("Raw wire")
        for box, label in (
            (self.overview, "Overview"),
            (self.arguments, "Arguments"),
            (self.result, "Result"),
            (self.step, "Step"),
            (self.raw, "Raw wire"),
        ):
            self.tabs.addTab(box, label)
        self.tabs.currentChanged.connect(self._tab_changed)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.title)
        layout.addWidget(self.tabs, 1)
        self.show_item(None)

    def set_timeline(self, timeline: Timeline | None) -> None:
        """Resolve tool calls' steps in ``timeline`` (the open session); clears the pane."""
        self._timeline = timeline
        self.show_item(None)

    def set_capture_loader(self, load_captures: CaptureLoader | None) -> None:
        """Load raw wire captures with ``load_captures`` from now on."""
        self._load_captures = load_captures
        self._raw_loaded_for = None
        if self.tabs.currentWidget() is self.raw:
            self._load_raw()

    def current_item(self) -> object:
        """The item shown (``None`` when empty)."""
        return self._item

    def show_item(self, item: object) -> None:
        """Show a timeline item: a tool call, an assistant step, a compaction, a notice, a user message."""
        self._item = item
        step: StepInfo | None = None
        boxes = {"overview": "", "arguments": "", "result": "", "step": ""}
        if isinstance(item, ToolItem):
            self.title.setText(f"Tool call: {item.name} — {item.status}")
            boxes["overview"] = tool_text(item)
            boxes["arguments"] = self._arguments_text(item)
            boxes["result"] = f"{_RESULT_WORDS.get(item.status, item.status)}\n\n{item.result_text or ''}"
            step = self._timeline.step(item.step_id) if self._timeline is not None else None
        elif isinstance(item, AssistantItem):
            self.title.setText(f"Step: {item.step.model} — {item.step.stop_reason or item.step.status}")
            step = item.step
            calls = "\n".join(f"{call.name}({call.arguments_text})  [{call.call_id}]" for call in item.calls)
            boxes["overview"] = item.text + (f"\n\ntool calls:\n{calls}" if calls else "")
        elif isinstance(item, CompactionItem):
            self.title.setText("Compaction")
            step = item.step
            boxes["overview"] = (
                f"{item.compacted} messages summarized, {item.retained} kept verbatim\n\nsummary:\n{item.summary}"
            )
        elif isinstance(item, NoticeItem):
            self.title.setText(f"Operation {item.kind}")
            step = item.step
            boxes["overview"] = f"{item.text}\ncode: {item.code or '—'}\noperation: {item.operation_id}"
        elif isinstance(item, UserItem):
            self.title.setText("User message")
            boxes["overview"] = item.text
        else:
            self.title.setText("Select a tool call or a step to inspect it.")
        boxes["step"] = step_text(step) if step is not None else "No model step."
        for name, text in boxes.items():
            getattr(self, name).setPlainText(text)
        self.tabs.setTabEnabled(self.tabs.indexOf(self.arguments), isinstance(item, ToolItem))
        self.tabs.setTabEnabled(self.tabs.indexOf(self.result), isinstance(item, ToolItem))
        self._raw_attempt = step.attempt_id if step is not None else None
        self._raw_loaded_for = None
        self.raw.setPlainText("" if step is not None else "No model step.")
        self.tabs.setTabEnabled(self.tabs.indexOf(self.raw), step is not None)
        if self.tabs.currentWidget() is self.raw:
            self._load_raw()

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

    def _tab_changed(self, _index: int) -> None:
        if self.tabs.currentWidget() is self.raw:
            self._load_raw()

    def _load_raw(self) -> None:
        attempt_id = self._raw_attempt
        if attempt_id is None or self._raw_loaded_for == attempt_id:
            return
        self._raw_loaded_for = attempt_id
        if self._load_captures is None:
            self.raw.setPlainText("Raw wire captures are not available here.")
            return
        try:
            captures = list(self._load_captures(attempt_id))
        except Exception as error:  # a ledger failure must not break the pane
            self.raw.setPlainText(f"Could not load the raw wire capture: {error}")
            return
        if not captures:
            self.raw.setPlainText("No raw wire capture was recorded for this request.")
            return
        parts = []
        for number, capture in enumerate(captures, 1):
            text = capture_text(capture)
            header = f"=== capture {number} of {len(captures)} ===\n" if len(captures) > 1 else ""
            parts.append(f"{header}--- request ---\n{text.request}\n\n--- response ---\n{text.response}")
        self.raw.setPlainText("\n\n".join(parts))
