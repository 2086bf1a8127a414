"""The approval prompt for one side-effecting tool call (SPEC §6), and the ``Approver`` that opens it.

:class:`ApprovalDialog` is **non-modal**: the main window stays usable while it is open (scroll the transcript to
see why the call is made). From top to bottom it shows the tool; for a risky call (the core's
:mod:`~tiny_agent_core.tools.risk`) a red badge with the findings; "Why:", the model's text of the step that made
the call; the real target of a file change when a symlink redirects the path named and any warnings (an executable
target, version-control internals); the preview (the command, or a coloured diff), word-wrapped in a monospace font
and scrollable; the arguments as editable JSON; a denial reason; the "always allow" scope; and the buttons. It
returns an :class:`ApprovalAnswer`: allow once, allow for this session, always allow, or deny (Esc, or closing it)
with an optional reason.

"Always allow" is scoped as the core offers (:attr:`ApprovalRequest.scopes`): a command prefix for ``bash`` (``git
status``), a path glob for ``write``/``edit`` (``src/**``), chosen from a list or typed (the core validates it), or
the whole tool for others. For an ordinary call "Allow once" is the default button and Ctrl+Enter allows once;
for a risky call "Deny" is the default (Enter denies), Ctrl+Enter does nothing, and "always" is disabled. Edited
arguments must be a JSON object; while they are not, the allow buttons are disabled and the problem is shown.

:class:`DialogApprover` implements the core's ``Approver`` protocol: ``await approver.ask(request)`` shows the
dialog with ``show()`` (never ``exec()``, never window-modal) and resolves when it finishes. Cancelling the
awaiting task (the user pressed Stop) closes the dialog.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QFontMetricsF,
    QKeySequence,
    QPalette,
    QResizeEvent,
    QShortcut,
    QShowEvent,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextOption,
)
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.mcp.names import shown_name
from tiny_agent_core.tools.approval import ApprovalAnswer, ApprovalRequest, Choice
from tiny_agent_core.tools.scopes import AllowRule

__all__ = ["RISK_BACKGROUND", "RISK_TEXT", "ApprovalDialog", "DialogApprover", "diff_colors", "parse_arguments"]

RISK_BACKGROUND = "#b3261e"
"""The risk badge's background: a red that keeps white text readable in light and dark themes."""
RISK_TEXT = "#ffffff"

_SCOPE_NAMES = {"prefix": "Command prefix", "glob": "Paths"}
_SCOPE_TIPS = {
    "prefix": "commands starting with this prefix (plain commands only: no ;, &&, |, $(…))",
    "glob": "changes to paths matching this glob in this workspace (** spans folders)",
}

_TINT = 0.28
"""How much green/red is mixed into the palette's base colour behind added/removed diff lines."""


def _mix(base: QColor, tint: QColor, amount: float) -> QColor:
    return QColor(
        round(base.red() * (1 - amount) + tint.red() * amount),
        round(base.green() * (1 - amount) + tint.green() * amount),
        round(base.blue() * (1 - amount) + tint.blue() * amount),
    )


def diff_colors(palette: QPalette) -> dict[str, QColor]:
    """Background colours for diff lines, derived from ``palette`` so they read in light and dark themes.

    Keys: ``added``, ``removed``, ``hunk`` (``@@`` lines and file headers).
    """
    base = palette.color(QPalette.ColorRole.Base)
    return {
        "added": _mix(base, QColor(0, 170, 0), _TINT),
        "removed": _mix(base, QColor(220, 0, 0), _TINT),
        "hunk": _mix(base, palette.color(QPalette.ColorRole.Highlight), _TINT),
    }


def _line_kind(line: str) -> str | None:
    if line.startswith(("+++", "---", "@@")):
        return "hunk"
    if line.startswith("+"):
        return "added"
    if line.startswith("-"):
        return "removed"
    return None


def parse_arguments(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """Edited arguments: ``(object, None)`` when ``text`` is a JSON object, else ``(None, why)``."""
    try:
        value = json.loads(text)
    except ValueError as error:
        return None, f"The arguments are not valid JSON: {error}."
    if not isinstance(value, dict):
        return None, "The arguments must be a JSON object ({…})."
    return value, None


class ApprovalDialog(QDialog):
    """Asks whether one tool call may run, without blocking the window. Read :meth:`answer` after ``finished``;
    Esc or closing it denies."""

    def __init__(self, request: ApprovalRequest, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request = request
        self._answer = ApprovalAnswer.deny()
        self._original = dict(request.arguments)
        self._risky = request.risk.risky
        self.setModal(False)
        self.setWindowModality(Qt.WindowModality.NonModal)
        shown = shown_name(request.tool_name)  # an MCP tool as mcp:<alias>/<tool>, not its function name
        self.setWindowTitle(f"{'Risky call: allow' if self._risky else 'Allow'} {shown}?")
        self.setAccessibleName(f"Approve tool call {shown}")
        self.setMinimumSize(640, 520)
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)

        layout = QVBoxLayout(self)
        layout.addWidget(_label(f"The agent wants to run <b>{_escape(shown)}</b>.", "Tool name"))
        self.risk_label: QLabel | None = None
        if self._risky:
            reasons = "".join(f"<li>{_escape(reason)}</li>" for reason in request.risk.reasons)
            self.risk_label = _label(
                f"<b>⚠ Risky — check before allowing:</b><ul style='margin: 0'>{reasons}</ul>",
                "Risk",
                "Risky: " + "; ".join(request.risk.reasons),
            )
            self.risk_label.setStyleSheet(
                f"QLabel {{ background: {RISK_BACKGROUND}; color: {RISK_TEXT}; border-radius: 4px; padding: 6px; }}"
            )
            layout.addWidget(self.risk_label)
        self.target_label: QLabel | None = None
        if request.target is not None:
            self.target_label = _label(
                f"Real target: <b>{_escape(request.target)}</b> (the path named leads there through a symlink)",
                "Real target",
            )
            self.target_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(self.target_label)
        self.warnings_label: QLabel | None = None
        if request.warnings:
            shown = "<br>".join(f"<b>⚠ {_escape(text)}</b>" for text in request.warnings)
            self.warnings_label = _label(shown, "Warnings", " ".join(request.warnings))
            layout.addWidget(self.warnings_label)

        self.rationale = _FittedText(request.rationale or "(The model gave no reason for this call.)", 8)
        self.rationale.setAccessibleName("Why: the model's rationale")
        _add_labelled(layout, "Why:", self.rationale)
        self.preview = _preview(request, fixed, self.palette())
        if self.preview is not None:
            title = "Changes:" if request.preview.kind == "diff" else "Command:"
            _add_labelled(layout, title, self.preview, 3 if request.preview.kind == "diff" else 0)
        if request.preview.error:
            layout.addWidget(_label(_escape(f"Preview unavailable: {request.preview.error}"), "Preview problem"))

        self.arguments_edit = QPlainTextEdit(request.arguments_json)
        self.arguments_edit.setFont(fixed)
        self.arguments_edit.setTabChangesFocus(True)
        self.arguments_edit.setAccessibleName("Arguments")
        _add_labelled(layout, "&Arguments (JSON, editable):", self.arguments_edit, 2)
        self.arguments_status = _label("", "Arguments status")
        self.arguments_status.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.arguments_status)
        self.reason_edit = QLineEdit()
        self.reason_edit.setAccessibleName("Denial reason")
        _add_labelled(layout, "Denial &reason (optional, the model reads it):", self.reason_edit)

        self.scope_combo: QComboBox | None = None
        self.scope_status = _label("", "Always allow status")
        self.scope_status.setTextFormat(Qt.TextFormat.PlainText)
        if request.scope_kind is not None:
            self.scope_combo = QComboBox()
            self.scope_combo.setEditable(True)
            self.scope_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
            self.scope_combo.addItems([rule.pattern for rule in request.scopes])
            self.scope_combo.setAccessibleName(_SCOPE_NAMES[request.scope_kind])
            self.scope_combo.setToolTip(_SCOPE_TIPS[request.scope_kind])
            self.scope_combo.setEnabled(request.can_allow_always)
            scope_label = QLabel(f"A&lways allow {_SCOPE_NAMES[request.scope_kind].lower()}:")
            scope_label.setBuddy(self.scope_combo)
            row = QHBoxLayout()
            row.addWidget(scope_label)
            row.addWidget(self.scope_combo, 1)
            layout.addLayout(row)
        layout.addWidget(self.scope_status)

        shortcut_hint = "" if self._risky else " (Ctrl+Enter)"
        self.allow_once_button = QPushButton(f"Allow &once{shortcut_hint}")
        self.allow_session_button = QPushButton("Allow for this &session")
        always = "Al&ways allow" if request.scope_kind is not None else f"Al&ways allow {shown}"
        self.allow_always_button = QPushButton(always)
        self.deny_button = QPushButton("&Deny (Esc)")
        always_tip = (
            "Not offered for a risky call: it asks every time"
            if self._risky
            else f"Never ask again for {_SCOPE_TIPS.get(request.scope_kind or 'tool', 'this tool')} (revocable in "
            "Settings → Tools)"
        )
        buttons = QHBoxLayout()
        for button, choice, tip in (
            (self.allow_once_button, Choice.ALLOW_ONCE, "Run this call once"),
            (self.allow_session_button, Choice.ALLOW_SESSION, "Run this tool without asking until the session ends"),
            (self.allow_always_button, Choice.ALLOW_ALWAYS, always_tip),
            (self.deny_button, Choice.DENY, "Do not run it; the model is told it was denied"),
        ):
            button.setAccessibleName(button.text().replace("&", ""))
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, choice=choice: self.choose(choice))
            buttons.addWidget(button)
        buttons.insertStretch(3)
        layout.addLayout(buttons)
        self.default_button = self.deny_button if self._risky else self.allow_once_button
        for button in (self.allow_once_button, self.allow_session_button, self.allow_always_button, self.deny_button):
            button.setAutoDefault(False)
        self.default_button.setDefault(True)
        self.default_button.setAutoDefault(True)

        if not self._risky:
            for sequence in ("Ctrl+Return", "Ctrl+Enter"):
                shortcut = QShortcut(QKeySequence(sequence), self)
                shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
                shortcut.activated.connect(lambda: self.choose(Choice.ALLOW_ONCE))

        self.arguments_edit.textChanged.connect(self._validate)
        if self.scope_combo is not None:
            self.scope_combo.editTextChanged.connect(lambda _text: self._validate())
        self._validate()
        self.default_button.setFocus()

    # -- answer --------------------------------------------------------------------------------------------

    def answer(self) -> ApprovalAnswer:
        """The answer (a denial until the user allows)."""
        return self._answer

    def choose(self, choice: Choice) -> None:
        """Answer with ``choice`` and close; allow choices are ignored while the arguments (or, for "always", the
        scope) are invalid."""
        if choice is Choice.DENY:
            self._answer = ApprovalAnswer.deny(self.reason_edit.text().strip() or None)
            super().reject()
            return
        arguments, problem = parse_arguments(self.arguments_edit.toPlainText())
        if arguments is None:
            self.arguments_status.setText(problem or "")
            return
        rule: AllowRule | None = None
        if choice is Choice.ALLOW_ALWAYS:
            if not self.request.can_allow_always:
                return
            rule, scope_problem = self._scope_rule()
            if scope_problem is not None:
                self.scope_status.setText(scope_problem)
                return
        self._answer = ApprovalAnswer(choice, arguments if arguments != self._original else None, rule=rule)
        self.accept()

    def reject(self) -> None:
        """Esc or closing the window denies (with the reason typed so far)."""
        self.choose(Choice.DENY)

    # -- internals -----------------------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        """Take the focus (a non-modal window is not activated for us), on the default button."""
        super().showEvent(event)
        self.activateWindow()

    def _scope_rule(self) -> tuple[AllowRule | None, str | None]:
        """The rule "always" would store (``None`` for the whole tool), or why the typed scope is not valid."""
        if self.scope_combo is None:
            return None, None
        try:
            return self.request.rule(self.scope_combo.currentText()), None
        except ValueError as error:
            return None, str(error)

    def _validate(self) -> None:
        arguments, problem = parse_arguments(self.arguments_edit.toPlainText())
        valid = arguments is not None
        rule, scope_problem = self._scope_rule()
        self.allow_once_button.setEnabled(valid)
        self.allow_session_button.setEnabled(valid)
        self.allow_always_button.setEnabled(valid and self.request.can_allow_always and scope_problem is None)
        if self._risky:
            self.scope_status.setText("“Always allow” is not offered for a risky call: it will ask every time.")
        elif scope_problem is not None:
            self.scope_status.setText(scope_problem)
        elif rule is not None:
            self.scope_status.setText(f"“Always allow” would allow {rule.describe()}; risky calls still ask.")
        else:
            self.scope_status.setText("")
        if not valid:
            self.arguments_status.setText(f"{problem} Fix them to allow the call, or deny it.")
        elif arguments != self._original:
            self.arguments_status.setText(
                "Edited: the call will run with these arguments (the preview shows the original)."
            )
        else:
            self.arguments_status.setText("")
        for status in (self.arguments_status, self.scope_status):
            status.setVisible(bool(status.text()))


def _label(text: str, name: str, description: str | None = None) -> QLabel:
    """A word-wrapped rich-text label with its accessible name (``text`` is markup: escape what is not ours)."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setWordWrap(True)
    label.setAccessibleName(name)
    if description is not None:
        label.setAccessibleDescription(description)
    return label


def _add_labelled(layout: QVBoxLayout, title: str, widget: QWidget, stretch: int = 0) -> None:
    """``title`` (with its mnemonic, if any) above ``widget``, its buddy."""
    label = QLabel(title)
    label.setBuddy(widget)
    layout.addWidget(label)
    layout.addWidget(widget, stretch)


def _preview(request: ApprovalRequest, font: QFont, palette: QPalette) -> QTextEdit | None:
    """The command, word-wrapped and as tall as it needs, or the diff with coloured lines; ``None`` for plain
    arguments (shown in the arguments editor)."""
    kind = request.preview.kind
    if kind == "command":
        preview: QTextEdit = _FittedText(request.preview.text, 14)
    elif kind == "diff":
        preview = QTextEdit()
        preview.setReadOnly(True)
        preview.setTabChangesFocus(True)
        preview.setLineWrapMode(QTextEdit.LineWrapMode.WidgetWidth)
        _fill_diff(preview, request.preview.text or "(no change)", palette)
    else:
        return None
    preview.setFont(font)
    preview.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    preview.setAccessibleName("Diff of the change" if kind == "diff" else "Command")
    return preview


def _fill_diff(preview: QTextEdit, text: str, palette: QPalette) -> None:
    colors = diff_colors(palette)
    char_format = QTextCharFormat()
    char_format.setForeground(palette.color(QPalette.ColorRole.Text))
    cursor = QTextCursor(preview.document())
    for index, line in enumerate(text.splitlines()):
        block_format = QTextBlockFormat()
        kind = _line_kind(line)
        if kind is not None:
            block_format.setBackground(colors[kind])
        if index == 0:
            cursor.setBlockFormat(block_format)
        else:
            cursor.insertBlock(block_format)
        cursor.insertText(line, char_format)
    preview.moveCursor(QTextCursor.MoveOperation.Start)


class _FittedText(QTextEdit):
    """Read-only, word-wrapped plain text as tall as its content up to ``max_lines``, scrolling beyond."""

    def __init__(self, text: str, max_lines: int) -> None:
        super().__init__()
        self._max_lines = max_lines
        self.setReadOnly(True)
        self.setTabChangesFocus(True)
        self.setLineWrapMode(QTextEdit.LineWrapMode.WidgetWidth)
        self.setPlainText(text)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().documentLayout().documentSizeChanged.connect(lambda _size: self._fit())
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Refit: the wrapped height follows the width."""
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        margin = 2 * self.document().documentMargin()
        limit = self._max_lines * QFontMetricsF(self.document().defaultFont()).lineSpacing() + margin
        content = max(self.document().size().height(), QFontMetricsF(self.font()).lineSpacing() + margin)
        self.setFixedHeight(round(min(content, limit)) + 2 * self.frameWidth())


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _Dialog(Protocol):
    """What :class:`DialogApprover` needs of a dialog (a fake one in tests)."""

    @property
    def finished(self) -> Any: ...

    @property
    def destroyed(self) -> Any: ...

    def answer(self) -> ApprovalAnswer: ...

    def show(self) -> None: ...

    def reject(self) -> None: ...

    def deleteLater(self) -> None: ...


DialogFactory = Callable[[ApprovalRequest, "QWidget | None"], _Dialog]
"""Builds the dialog for a request (default :class:`ApprovalDialog`)."""


class DialogApprover:
    """The window's :class:`~tiny_agent_core.tools.approval.Approver`: one non-blocking dialog per request."""

    def __init__(self, parent: QWidget | None = None, *, dialog_factory: DialogFactory = ApprovalDialog) -> None:
        self.parent = parent
        self.dialog_factory = dialog_factory

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Show the (non-modal) dialog and wait for its answer without blocking the event loop or the window;
        cancelling closes it. The window being destroyed under it (it is not modal: the window can be closed)
        denies the call."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ApprovalAnswer] = loop.create_future()
        dialog = self.dialog_factory(request, self.parent)
        alive = True

        def resolve(_result: int) -> None:
            if not future.done():
                future.set_result(dialog.answer())

        def destroyed(_object: object = None) -> None:
            nonlocal alive
            alive = False
            if not future.done():
                future.set_result(ApprovalAnswer.deny("The window asking for approval was closed."))

        dialog.finished.connect(resolve)
        dialog.destroyed.connect(destroyed)
        dialog.show()
        try:
            return await future
        finally:
            if alive:
                if not future.done():  # cancelled while the dialog is open
                    future.cancel()
                    dialog.reject()
                dialog.deleteLater()
