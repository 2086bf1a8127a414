"""How each tool call ended, in data and in one line: outcome, summary, diff (no Qt here).

The session file records only a result *type* (``success``, ``error``, or a synthetic reason) and the text the
model read. A ``bash`` call that ended ``Command exited with code 1`` is a ``success`` there (the adapter settled,
reference notes §6.1), and a denied call is an ``error`` like any failed read. The fixed result texts of the
reference (notes §5.10, §6.2–§6.5) and of our approval policy tell the cases apart, so :func:`call_outcome` derives
the outcome a person means:

=============== ================================================================================================
``ok``          the tool ran and reported no failure
``exit``        ``bash`` ended with a non-zero code (:attr:`Outcome.exit_code`) or was killed by a signal
``timeout``     ``bash`` ran out of time (``Command timed out after <t> seconds.``)
``error``       the tool failed (``Error: <message>``), or ``bash`` passed its 10 MB output cap
``denied``      the user (or ``tiny-agent run``'s allow-list) refused the call; :attr:`Outcome.reason` is why
``interrupted`` the run was cancelled or crashed while the tool ran (its effects are unknown)
``not_run``     never executed: unknown (or not offered) tool, invalid or truncated arguments, aborted before it
=============== ================================================================================================

:func:`call_summary` is the one line shown for a call everywhere (transcript cards, their accessible text, the
waterfall, ``tiny-agent session show``): ``read src/cart.py · 360 lines``, ``edit greet.py +1 −1``,
``bash pytest -q → exit 1 · 401 lines``, ``denied: git push --force origin main``. :func:`call_diff` derives what an
``edit`` or ``write`` changes from the call's executed arguments, so the diff shown at approval stays visible after.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tiny_agent_core.mcp.names import shown_name

__all__ = [
    "DENIAL_TEXT",
    "FileDiff",
    "Outcome",
    "OutcomeKind",
    "OutputShape",
    "call_diff",
    "call_outcome",
    "call_summary",
    "call_target",
    "output_excerpt",
    "output_shape",
]

OutcomeKind = Literal["ok", "exit", "timeout", "error", "denied", "interrupted", "not_run"]
"""How a finished tool call ended (see the module docstring)."""

DENIAL_TEXT = "Tool call denied; the tool was not executed."
"""How the error message of a denied call begins (``tools.approval``; the result reads ``Error: <this>``), followed
by `` Reason: <why>`` when one was given."""

_DENIAL_REASON = " Reason: "

_NOT_RUN_REASONS = {
    "unknownTool": "unknown tool",
    "invalidArguments": "invalid arguments",
    "truncated": "arguments truncated",
    "aborted": "aborted before it ran",
}
"""Synthetic reasons of calls that never executed (reference notes §5.10) → words."""

_EXIT = re.compile(r"(?:\A|\n\n)Command exited with code (\d+)\Z")
_SIGNAL = re.compile(r"(?:\A|\n\n)Command was killed by signal (\w+)\Z")
_TIMEOUT = re.compile(r"(?:\A|\n\n)Command timed out after (\S+) seconds\.\Z")
_CAP = re.compile(r"(?:\A|\n\n)Bash output exceeded the 10MB safety cap; complete output was not captured\.\Z")
_SHOWING = re.compile(r"\n\n\[Showing lines (\d+)-(\d+) of (\d+)\. [^\n]*\]\Z")
"""The truncation note of ``bash`` and ``read`` (the full output's line count, or the file's)."""
_UNICODE_NOTE = re.compile(r"\n\n\[\d+ character\(s\) that are not valid Unicode were replaced with \ufffd\.\]\Z")

_TARGET_LIMIT = 120
"""Characters of a command or argument summary kept in a summary line."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one finished tool call ended."""

    kind: OutcomeKind
    exit_code: int | None = None
    """The non-zero exit code of an ``exit`` outcome (``None`` when a signal killed the command)."""
    reason: str | None = None
    """Why, in words: the user's denial reason, the tool's error message (first line), the signal's name, the
    timeout (``5 seconds``), or why a call was not run; ``None`` when there is nothing to add."""

    @property
    def label(self) -> str:
        """A word or two for a chip: ``ok``, ``exit 1``, ``timed out``, ``error``, ``denied``, …"""
        if self.kind == "exit":
            return f"exit {self.exit_code}" if self.exit_code is not None else f"killed ({self.reason})"
        return {"timeout": "timed out", "not_run": "not run"}.get(self.kind, self.kind)

    @property
    def description(self) -> str:
        """The label with its reason, for the inspector and accessible text (``denied: not now``)."""
        if self.kind == "exit" or not self.reason:
            return self.label
        if self.kind == "timeout":
            return f"timed out after {self.reason}"
        return f"{self.label}: {self.reason}"


@dataclass(frozen=True, slots=True)
class OutputShape:
    """What a result text holds, notes aside."""

    body: str
    """The output without the truncation, exit, timeout, cap and Unicode notes."""
    lines: int
    """Lines of the whole output (the truncation note's total when the text holds only a tail)."""
    shown: tuple[int, int] | None = None
    """``(first, last)`` line shown when the text holds only part of the output (or of a read file)."""


@dataclass(frozen=True, slots=True)
class FileDiff:
    """What an ``edit`` or ``write`` changes, derived from its arguments."""

    path: str
    added: int
    removed: int | None
    """``None`` for ``write``: the file's earlier content is not in the session, so what it replaced is unknown."""
    text: str
    """A unified diff (``@@ edit 1 of 2 @@`` hunks for an edit; every line added for a write)."""

    @property
    def stat(self) -> str:
        """``+1 −1`` (``+12`` for a write)."""
        return f"+{self.added}" if self.removed is None else f"+{self.added} \u2212{self.removed}"


def call_outcome(name: str, status: str, result_text: str | None) -> Outcome | None:
    """The outcome of a call from its timeline status and result text; ``None`` while it has no result.

    ``status`` is ``pending``, ``running``, a result type (``success``, ``error``) or a synthetic reason.
    """
    if status in ("pending", "running"):
        return None
    if status == "interrupted":
        return Outcome("interrupted")
    if status in _NOT_RUN_REASONS:
        return Outcome("not_run", reason=_NOT_RUN_REASONS[status])
    text = result_text or ""
    if status == "error":
        message = text.removeprefix("Error: ").strip()
        if message.startswith(DENIAL_TEXT):
            _, _, reason = message.partition(_DENIAL_REASON)
            return Outcome("denied", reason=reason.strip() or None)
        return Outcome("error", reason=message.splitlines()[0] if message else None)
    if status != "success":
        return Outcome("not_run", reason=status)
    if name == "bash":
        return _bash_outcome(_strip_notes(text))
    return Outcome("ok")


def _strip_notes(text: str) -> str:
    """``text`` without the Unicode note and the truncation note that may follow a tool's own ending."""
    text = _UNICODE_NOTE.sub("", text)
    return _SHOWING.sub("", text)


def _bash_outcome(text: str) -> Outcome:
    if match := _EXIT.search(text):
        return Outcome("exit", exit_code=int(match[1]))
    if match := _SIGNAL.search(text):
        return Outcome("exit", reason=match[1])
    if match := _TIMEOUT.search(text):
        return Outcome("timeout", reason=f"{match[1]} s")
    if _CAP.search(text):
        return Outcome("error", reason="output passed the 10 MB cap; the command was stopped")
    return Outcome("ok")


def output_shape(name: str, result_text: str) -> OutputShape:
    """The output of a result text and its size, without the notes the tools append."""
    text = _UNICODE_NOTE.sub("", result_text)
    shown: tuple[int, int] | None = None
    total: int | None = None
    if match := _SHOWING.search(text):
        shown, total = (int(match[1]), int(match[2])), int(match[3])
        text = text[: match.start()]
    if name == "bash":
        for note in (_EXIT, _SIGNAL, _TIMEOUT, _CAP):
            text = note.sub("", text)
        if text == "(no output)":
            text = ""
    lines = text.count("\n") + 1 if text else 0
    if text.endswith("\n"):
        lines -= 1
    return OutputShape(text, total if total is not None else lines, shown)


def call_target(name: str, arguments: Mapping[str, Any] | None, arguments_text: str) -> str:
    """What a call acts on, in one line: the command of ``bash``, the path of a file tool, else its arguments."""
    args = arguments or {}
    if name == "bash" and isinstance(args.get("command"), str):
        return _one_line(args["command"])
    if name in ("read", "write", "edit") and isinstance(args.get("path"), str):
        return _one_line(args["path"])
    if name == "bg" and isinstance(args.get("action"), str):
        detail = args.get("command") if args["action"] == "start" else args.get("id")
        return _one_line(f"{args['action']} {detail}" if isinstance(detail, str | int) else args["action"])
    if arguments is None:
        return _one_line(arguments_text)
    return _one_line(", ".join(f"{key}={_value_text(value)}" for key, value in arguments.items()))


def _value_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TARGET_LIMIT else text[: _TARGET_LIMIT - 1] + "…"


def _lines_text(count: int) -> str:
    return f"{count:,} line{'s' if count != 1 else ''}"


def call_summary(
    name: str,
    arguments: Mapping[str, Any] | None,
    arguments_text: str,
    outcome: Outcome | None,
    result_text: str | None,
) -> str:
    """The call in one line (see the module docstring); a call without a result is summarized by its target."""
    target = call_target(name, arguments, arguments_text)
    head = f"{shown_name(name)} {target}".rstrip()
    if outcome is None:
        return head
    if outcome.kind == "denied":
        return f"denied: {target if name == 'bash' else head}"
    if outcome.kind in ("interrupted", "not_run", "error"):
        return f"{head} → {outcome.description}"
    diff = call_diff(name, arguments)
    if diff is not None and outcome.kind == "ok":
        return f"{head} {diff.stat}"
    shape = output_shape(name, result_text or "")
    if name == "bash":
        size = _lines_text(shape.lines) if shape.lines else "no output"
        if outcome.kind == "ok":
            return f"{head} · {size}"
        return f"{head} → {outcome.description} · {size}"
    if name == "read":
        if shape.shown is not None:
            first, last = shape.shown
            return f"{head} · lines {first:,}–{last:,} of {shape.lines:,}"
        return f"{head} · {_lines_text(shape.lines)}"
    return head


def call_diff(name: str, arguments: Mapping[str, Any] | None) -> FileDiff | None:
    """The change an ``edit`` or ``write`` call makes, from its (executed) arguments; ``None`` for other calls
    or arguments that do not describe a change."""
    if arguments is None or not isinstance(arguments.get("path"), str):
        return None
    path: str = arguments["path"]
    if name == "write" and isinstance(arguments.get("content"), str):
        lines = arguments["content"].splitlines()
        text = "\n".join([f"+++ {path}", *(f"+{line}" for line in lines)])
        return FileDiff(path, len(lines), None, text)
    edits = arguments.get("edits")
    if name != "edit" or not isinstance(edits, list) or not edits:
        return None
    hunks = [f"--- {path}", f"+++ {path}"]
    added = removed = 0
    for number, edit in enumerate(edits, 1):
        if not isinstance(edit, dict) or not isinstance(edit.get("oldText"), str):
            return None
        new = edit.get("newText")
        if not isinstance(new, str):
            return None
        hunks.append(f"@@ edit {number} of {len(edits)} @@")
        old_lines, new_lines = edit["oldText"].splitlines(), new.splitlines()
        whole = max(len(old_lines), len(new_lines))  # as much context as there is: the edit's own text
        body = list(difflib.unified_diff(old_lines, new_lines, lineterm="", n=whole))[3:] or [
            " " + line for line in old_lines
        ]
        added += sum(1 for line in body if line.startswith("+"))
        removed += sum(1 for line in body if line.startswith("-"))
        hunks.extend(body)
    return FileDiff(path, added, removed, "\n".join(hunks))


def output_excerpt(text: str, head: int = 6, tail: int = 6) -> str:
    """The first ``head`` and last ``tail`` lines of ``text``, with ``… N more lines …`` between when it is longer."""
    lines = text.rstrip("\n").split("\n")
    if len(lines) <= head + tail + 1:
        return "\n".join(lines)
    hidden = len(lines) - head - tail
    return "\n".join([*lines[:head], f"… {hidden:,} more lines …", *lines[-tail:]])
