"""The composer under the transcript: the model of the next request above it (Ctrl+M changes it); type a prompt,
Enter sends, Shift+Enter breaks the line, Esc cancels.

Sending clears the editor at once; a prompt the window could not send comes back (:meth:`Composer.give_back`).
What was typed meanwhile is never overwritten: the prompt given back goes before it, a blank line between (it was
written first), and the cursor goes to the end.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal, Slot
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QToolButton, QVBoxLayout, QWidget

from tiny_agent_gui.model_picker import ModelButton


class PromptEdit(QPlainTextEdit):
    """The prompt editor: Enter submits, Shift+Enter inserts a newline, Esc asks to cancel."""

    submit_pressed = Signal()
    """Enter (or keypad Enter) without Shift."""
    escape_pressed = Signal()
    """Esc."""

    def sizeHint(self) -> QSize:
        """About three lines tall: the transcript above takes the room."""
        base = super().sizeHint()
        margins = self.contentsMargins()
        height = self.fontMetrics().lineSpacing() * 3 + 2 * int(self.document().documentMargin())
        return QSize(base.width(), height + margins.top() + margins.bottom())

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Enter submits and Esc cancels; everything else edits (Shift+Enter is a newline)."""
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.submit_pressed.emit()
            return
        if key == Qt.Key.Key_Escape:
            self.escape_pressed.emit()
            return
        super().keyPressEvent(event)


class Composer(QWidget):
    """Prompt editor plus a Send/Stop button, under the model of the next request and beside a small Compact button
    (:attr:`compact_button`, the window gives it its action).

    ``submitted(text)`` fires on Enter or Send with non-blank text while idle (the editor is then cleared);
    ``cancel_requested`` fires on Esc or Stop; ``model_requested`` when the model button is clicked. :meth:`set_busy`
    switches the button between Send and Stop.
    """

    submitted = Signal(str)
    """The prompt to send."""
    cancel_requested = Signal()
    """The user asked to stop the running operation (Esc or Stop)."""
    model_requested = Signal()
    """The user wants to choose the model of the next request (the model button)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        """An empty, idle composer."""
        super().__init__(parent)
        self.setAccessibleName("Composer")
        self._busy = False
        self.editor = PromptEdit(self)
        """The text box."""
        self.editor.setAccessibleName("Prompt")
        self.editor.setAccessibleDescription("Type a message for the agent")
        self.editor.setPlaceholderText("Message the agent — Enter to send, Shift+Enter for a new line")
        self.editor.setToolTip(
            "Enter: send · Shift+Enter: new line · Esc: stop\n/compact: compact the conversation · "
            "/skill:NAME text: send this workspace's skill NAME with your text"
        )
        self.editor.setTabChangesFocus(True)
        self.editor.setMaximumHeight(self.editor.fontMetrics().lineSpacing() * 8)
        self.editor.submit_pressed.connect(self._submit)
        self.editor.escape_pressed.connect(self.cancel_requested)
        self.button = QPushButton("Send", self)
        """Send when idle, Stop when busy."""
        self.button.setAccessibleName("Send")
        self.button.setToolTip("Send (Enter)")
        self.button.clicked.connect(self._button_clicked)
        self.model_button = ModelButton(self)
        """The provider · model of the next request; opens the model picker."""
        self.model_button.clicked.connect(self.model_requested)
        self.compact_button = QToolButton(self)
        """Compacts the conversation (the window sets Session › Compact as its action)."""
        self.compact_button.setAutoRaise(True)
        self.compact_button.setAccessibleName("Compact")
        top = QHBoxLayout()
        top.addWidget(self.model_button, 0, Qt.AlignmentFlag.AlignLeft)
        top.addStretch(1)
        top.addWidget(self.compact_button)
        row = QHBoxLayout()
        row.addWidget(self.editor, 1)
        row.addWidget(self.button, 0, Qt.AlignmentFlag.AlignBottom)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addLayout(row)

    def is_busy(self) -> bool:
        """Whether an operation runs (the button says Stop)."""
        return self._busy

    def text(self) -> str:
        """The prompt typed so far."""
        return self.editor.toPlainText()

    @Slot(bool)
    def set_busy(self, busy: bool) -> None:
        """Show Stop while an operation runs, Send otherwise (typing stays possible)."""
        self._busy = busy
        label, tip = ("Stop", "Stop (Esc)") if busy else ("Send", "Send (Enter)")
        self.button.setText(label)
        self.button.setAccessibleName(label)
        self.button.setToolTip(tip)

    @Slot(str)
    def give_back(self, prompt: str) -> None:
        """``prompt`` was not sent: put it back (before anything typed since, see the module docstring), with the
        cursor at the end and the focus in the editor."""
        current = self.editor.toPlainText()
        if current != prompt:
            cursor = QTextCursor(self.editor.document())
            cursor.movePosition(QTextCursor.MoveOperation.Start)
            cursor.insertText(f"{prompt}\n\n" if current.strip() else prompt)
        self.editor.moveCursor(QTextCursor.MoveOperation.End)
        self.editor.setFocus()

    def _button_clicked(self) -> None:
        if self._busy:
            self.cancel_requested.emit()
        else:
            self._submit()

    def _submit(self) -> None:
        text = self.editor.toPlainText()
        if self._busy or not text.strip():
            return
        self.editor.clear()
        self.submitted.emit(text)
