"""Text rendering for the transcript: Markdown documents with highlighted code, cached per item.

Markdown goes through :meth:`QTextDocument.setMarkdown` (GitHub dialect). Fenced code blocks come out of Qt's
importer as consecutive blocks carrying ``BlockCodeFence``/``BlockCodeLanguage``; they get a shaded background,
and when Pygments is installed their text is tokenized once and coloured in place (a light or dark Pygments style,
following the palette), otherwise they stay in Qt's monospace font. Documents are cached by item identity (items
are immutable and are replaced, never mutated, when they change), with a bounded LRU so long sessions do not keep
every layout alive.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from pygments.lexers import get_lexer_by_name, guess_lexer
from pygments.styles import get_style_by_name
from pygments.util import ClassNotFound
from PySide6.QtGui import QColor, QFont, QTextBlockFormat, QTextCharFormat, QTextCursor, QTextDocument, QTextFormat

_FORMATS: dict[tuple[bool, Any], QTextCharFormat | None] = {}


def _token_format(dark: bool, token: Any) -> QTextCharFormat | None:
    key = (dark, token)
    if key not in _FORMATS:
        style = get_style_by_name("monokai" if dark else "default").style_for_token(token)
        fmt: QTextCharFormat | None = None
        if style["color"] or style["bold"] or style["italic"]:
            fmt = QTextCharFormat()
            if style["color"]:
                fmt.setForeground(QColor("#" + style["color"]))
            if style["bold"]:
                fmt.setFontWeight(QFont.Weight.Bold)
            if style["italic"]:
                fmt.setFontItalic(True)
        _FORMATS[key] = fmt
    return _FORMATS[key]


def code_runs(document: QTextDocument) -> list[tuple[int, str, str]]:
    """``(start position, language, text)`` of every fenced code block."""
    runs: list[tuple[int, str, str]] = []
    block = document.begin()
    current: tuple[int, str, list[str]] | None = None
    while block.isValid():
        fmt = block.blockFormat()
        if fmt.hasProperty(QTextFormat.Property.BlockCodeFence):
            language = fmt.stringProperty(QTextFormat.Property.BlockCodeLanguage)
            if current is None or current[1] != language:
                if current is not None:
                    runs.append((current[0], current[1], "\n".join(current[2])))
                current = (block.position(), language, [])
            current[2].append(block.text())
        elif current is not None:
            runs.append((current[0], current[1], "\n".join(current[2])))
            current = None
        block = block.next()
    if current is not None:
        runs.append((current[0], current[1], "\n".join(current[2])))
    return runs


def highlight_code(document: QTextDocument, dark: bool) -> int:
    """Colour the fenced code blocks of a Markdown document in place; returns how many were highlighted."""
    count = 0
    cursor = QTextCursor(document)
    for start, language, text in code_runs(document):
        try:
            lexer = get_lexer_by_name(language) if language else guess_lexer(text)
        except ClassNotFound:
            continue
        offset = start
        for token, value in lexer.get_tokens(text):
            fmt = _token_format(dark, token)
            if fmt is not None and value.strip():
                cursor.setPosition(offset)
                cursor.setPosition(offset + len(value), QTextCursor.MoveMode.KeepAnchor)
                cursor.mergeCharFormat(fmt)
            offset += len(value)
        count += 1
    return count


def markdown_document(text: str, font: QFont, dark: bool) -> QTextDocument:
    """A document rendering ``text`` as GitHub Markdown with highlighted code blocks."""
    document = QTextDocument()
    document.setDefaultFont(font)
    document.setDocumentMargin(0)
    document.setMarkdown(text, QTextDocument.MarkdownFeature.MarkdownDialectGitHub)
    highlight_code(document, dark)
    shade_code(document)
    return document


_CODE_SHADE = QColor(128, 128, 128, 38)
"""Behind fenced code: a grey that reads on light and dark palettes alike."""


def shade_code(document: QTextDocument) -> None:
    """Give every fenced code block of a Markdown document a background, in place."""
    cursor = QTextCursor(document)
    block = document.begin()
    while block.isValid():
        if block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence):
            cursor.setPosition(block.position())
            fmt = QTextBlockFormat()
            fmt.setBackground(_CODE_SHADE)
            cursor.mergeBlockFormat(fmt)
        block = block.next()


def code_blocks(text: str) -> list[str]:
    """The fenced code blocks of a Markdown text, in order (what "Copy Code" copies)."""
    document = QTextDocument()
    document.setMarkdown(text, QTextDocument.MarkdownFeature.MarkdownDialectGitHub)
    return [code for _start, _language, code in code_runs(document)]


def plain_document(text: str, font: QFont) -> QTextDocument:
    """A document showing ``text`` as wrapped plain text."""
    document = QTextDocument()
    document.setDefaultFont(font)
    document.setDocumentMargin(0)
    document.setPlainText(text)
    return document


_DIFF_TINTS = {"+": QColor(46, 160, 67, 70), "-": QColor(248, 81, 73, 70)}


def tint_diff(document: QTextDocument) -> None:
    """Give the added and removed lines of a unified diff in ``document`` a green and a red tint, in place."""
    cursor = QTextCursor(document)
    block = document.begin()
    while block.isValid():
        line = block.text()
        tint = _DIFF_TINTS.get(line[:1]) if not line.startswith(("+++", "---")) else None
        if tint is not None:
            cursor.setPosition(block.position())
            fmt = QTextBlockFormat()
            fmt.setBackground(tint)
            cursor.mergeBlockFormat(fmt)
        block = block.next()


def diff_document(text: str, font: QFont) -> QTextDocument:
    """A unified diff as wrapped plain text whose added and removed lines are tinted (:func:`tint_diff`)."""
    document = plain_document(text, font)
    tint_diff(document)
    return document


class DocumentCache:
    """Documents per item, keyed by the item object itself (held, so its ``id`` cannot be reused), LRU-bounded."""

    def __init__(self, capacity: int = 500) -> None:
        """Keep at most ``capacity`` documents."""
        self._capacity = capacity
        self._entries: OrderedDict[int, tuple[object, QTextDocument]] = OrderedDict()

    def get(self, item: object) -> QTextDocument | None:
        """The cached document of ``item``, if any (marks it recently used)."""
        entry = self._entries.get(id(item))
        if entry is None or entry[0] is not item:
            return None
        self._entries.move_to_end(id(item))
        return entry[1]

    def put(self, item: object, document: QTextDocument) -> None:
        """Cache ``document`` for ``item``, evicting the least recently used beyond the capacity."""
        self._entries[id(item)] = (item, document)
        self._entries.move_to_end(id(item))
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every document (e.g. after a palette or font change)."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
