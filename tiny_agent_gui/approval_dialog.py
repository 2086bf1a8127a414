"""The approval prompt for one side-effecting tool call (SPEC §6), and the ``Approver`` that opens it.

:class:`ApprovalDialog` shows the tool, the real target of a file change when a symlink redirects the path named
and any warnings (an executable target, version-control internals such as ``.git/hooks``) right under the
heading, its preview (a coloured diff for ``write``/``edit``, the command for ``bash``) and its arguments as
editable JSON, and returns an :class:`ApprovalAnswer`: allow once (the default
button, Ctrl+Enter), allow for this session, always allow this tool, or deny (Esc) with an optional reason. Edited
arguments must be a JSON object; while they are not, the allow buttons are disabled and the problem is shown.

:class:`DialogApprover` implements the core's ``Approver`` protocol: ``await approver.ask(request)`` opens the
dialog with ``open()`` (never ``exec()``), so the event loop keeps running, and resolves when the dialog finishes.
Cancelling the awaiting task (the user pressed Stop) closes the dialog.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QColor,
    QFontDatabase,
    QKeySequence,
    QPalette,
    QShortcut,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.tools.approval import ApprovalAnswer, ApprovalRequest, Choice

__all__ = ["ApprovalDialog", "DialogApprover", "diff_colors", "parse_arguments"]

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
    """Asks whether one tool call may run. Read :meth:`answer` after ``finished``; Esc or closing it denies."""

    def __init__(self, request: ApprovalRequest, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request = request
        self._answer = ApprovalAnswer.deny()
        self._original = dict(request.arguments)
        self.setWindowTitle(f"Allow {request.tool_name}?")
        self.setAccessibleName(f"Approve tool call {request.tool_name}")
        self.setMinimumSize(640, 480)
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)

        heading = QLabel(f"The agent wants to run <b>{_escape(request.tool_name)}</b>.")
        heading.setTextFormat(Qt.TextFormat.RichText)
        heading.setAccessibleName("Tool name")
        layout = QVBoxLayout(self)
        layout.addWidget(heading)

        self.target_label: QLabel | None = None
        if request.target is not None:
            self.target_label = QLabel(
                f"Real target: <b>{_escape(request.target)}</b> (the path named leads there through a symlink)"
            )
            self.target_label.setTextFormat(Qt.TextFormat.RichText)
            self.target_label.setWordWrap(True)
            self.target_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.target_label.setAccessibleName("Real target")
            layout.addWidget(self.target_label)
        self.warnings_label: QLabel | None = None
        if request.warnings:
            self.warnings_label = QLabel("<br>".join(f"<b>⚠ {_escape(text)}</b>" for text in request.warnings))
            self.warnings_label.setTextFormat(Qt.TextFormat.RichText)
            self.warnings_label.setWordWrap(True)
            self.warnings_label.setAccessibleName("Warnings")
            self.warnings_label.setAccessibleDescription(" ".join(request.warnings))
            layout.addWidget(self.warnings_label)

        self.preview: QTextEdit | None = None
        if request.preview.kind in ("diff", "command"):
            title = "Changes:" if request.preview.kind == "diff" else "Command:"
            preview_label = QLabel(title)
            self.preview = QTextEdit()
            self.preview.setReadOnly(True)
            self.preview.setFont(fixed)
            self.preview.setLineWrapMode(QTextEdit.LineWrapMode.NoWrap)
            self.preview.setAccessibleName("Diff of the change" if request.preview.kind == "diff" else "Command")
            self.preview.setTabChangesFocus(True)
            if request.preview.kind == "diff":
                self._fill_diff(request.preview.text or "(no change)")
            else:
                self.preview.setPlainText(request.preview.text)
            preview_label.setBuddy(self.preview)
            layout.addWidget(preview_label)
            layout.addWidget(self.preview, 3)
        if request.preview.error:
            problem = QLabel(f"Preview unavailable: {request.preview.error}")
            problem.setWordWrap(True)
            problem.setAccessibleName("Preview problem")
            layout.addWidget(problem)

        arguments_label = QLabel("&Arguments (JSON, editable):")
        self.arguments_edit = QPlainTextEdit(request.arguments_json)
        self.arguments_edit.setFont(fixed)
        self.arguments_edit.setTabChangesFocus(True)
        self.arguments_edit.setAccessibleName("Arguments")
        arguments_label.setBuddy(self.arguments_edit)
        self.arguments_status = QLabel()
        self.arguments_status.setWordWrap(True)
        self.arguments_status.setAccessibleName("Arguments status")
        layout.addWidget(arguments_label)
        layout.addWidget(self.arguments_edit, 2)
        layout.addWidget(self.arguments_status)

        reason_label = QLabel("Denial &reason (optional, the model reads it):")
        self.reason_edit = QLineEdit()
        self.reason_edit.setAccessibleName("Denial reason")
        reason_label.setBuddy(self.reason_edit)
        layout.addWidget(reason_label)
        layout.addWidget(self.reason_edit)

        self.allow_once_button = QPushButton("Allow &once (Ctrl+Enter)")
        self.allow_session_button = QPushButton("Allow for this &session")
        self.allow_always_button = QPushButton(f"Al&ways allow {request.tool_name}")
        self.deny_button = QPushButton("&Deny (Esc)")
        buttons = QHBoxLayout()
        for button, choice, tip in (
            (self.allow_once_button, Choice.ALLOW_ONCE, "Run this call once"),
            (self.allow_session_button, Choice.ALLOW_SESSION, "Run this tool without asking until the session ends"),
            (self.allow_always_button, Choice.ALLOW_ALWAYS, "Never ask for this tool again (revocable in Settings)"),
            (self.deny_button, Choice.DENY, "Do not run it; the model is told it was denied"),
        ):
            button.setAccessibleName(button.text().replace("&", ""))
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, choice=choice: self.choose(choice))
            buttons.addWidget(button)
        buttons.insertStretch(3)
        self.allow_once_button.setDefault(True)
        self.allow_once_button.setAutoDefault(True)
        layout.addLayout(buttons)

        for sequence in ("Ctrl+Return", "Ctrl+Enter"):
            shortcut = QShortcut(QKeySequence(sequence), self)
            shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
            shortcut.activated.connect(lambda: self.choose(Choice.ALLOW_ONCE))

        self.arguments_edit.textChanged.connect(self._validate)
        self._validate()
        self.allow_once_button.setFocus()

    # -- answer --------------------------------------------------------------------------------------------

    def answer(self) -> ApprovalAnswer:
        """The answer (a denial until the user allows)."""
        return self._answer

    def choose(self, choice: Choice) -> None:
        """Answer with ``choice`` and close; allow choices are ignored while the arguments are invalid."""
        if choice is Choice.DENY:
            self._answer = ApprovalAnswer.deny(self.reason_edit.text().strip() or None)
            super().reject()
            return
        arguments, problem = parse_arguments(self.arguments_edit.toPlainText())
        if arguments is None:
            self.arguments_status.setText(problem or "")
            return
        self._answer = ApprovalAnswer(choice, arguments if arguments != self._original else None)
        self.accept()

    def reject(self) -> None:
        """Esc or closing the window denies (with the reason typed so far)."""
        self.choose(Choice.DENY)

    # -- internals -----------------------------------------------------------------------------------------

    def _validate(self) -> None:
        arguments, problem = parse_arguments(self.arguments_edit.toPlainText())
        valid = arguments is not None
        for button in (self.allow_once_button, self.allow_session_button, self.allow_always_button):
            button.setEnabled(valid)
        if not valid:
            self.arguments_status.setText(f"{problem} Fix them to allow the call, or deny it.")
        elif arguments != self._original:
            self.arguments_status.setText(
                "Edited: the call will run with these arguments (the preview shows the original)."
            )
        else:
            self.arguments_status.setText("")

    def _fill_diff(self, text: str) -> None:
        assert self.preview is not None
        colors = diff_colors(self.palette())
        foreground = self.palette().color(QPalette.ColorRole.Text)
        cursor = QTextCursor(self.preview.document())
        char_format = QTextCharFormat()
        char_format.setForeground(foreground)
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
        self.preview.moveCursor(QTextCursor.MoveOperation.Start)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _Dialog(Protocol):
    """What :class:`DialogApprover` needs of a dialog (a fake one in tests)."""

    @property
    def finished(self) -> Any: ...

    def answer(self) -> ApprovalAnswer: ...

    def open(self) -> None: ...

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
        """Open the dialog and wait for its answer without blocking the event loop; cancelling closes it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ApprovalAnswer] = loop.create_future()
        dialog = self.dialog_factory(request, self.parent)

        def resolve(_result: int) -> None:
            if not future.done():
                future.set_result(dialog.answer())

        dialog.finished.connect(resolve)
        dialog.open()
        try:
            return await future
        finally:
            if not future.done():  # cancelled while the dialog is open
                future.cancel()
                dialog.reject()
            dialog.deleteLater()
