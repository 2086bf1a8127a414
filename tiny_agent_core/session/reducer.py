"""The strict v2 session reducer: bytes → :class:`SessionState` or :class:`SessionCorruption` (notes §5.3–5.7).

Every rule, check order and corruption code follows the reference's ``reduceSession`` (``RED``), so a file gets
the same verdict here as there. What differs is the cost: the reference deep-clones its whole state for every
transaction and re-validates the whole transcript after each one, which makes loading quadratic. Here:

* the state is mutable and every lookup is a dict/set probe: entries, attempts, tools and reservations are
  indexed (:class:`~tiny_agent_core.session.state.SessionIndex`), the tool-call pending set of the transcript
  and the pending ``toolStarted`` count of a run are kept, and compaction sources are hashed incrementally (the
  digest of the message prefix is extended, never redone);
* each fact is validated completely before it changes anything, and a transaction is atomic: if any of its facts
  (or the transcript check at its end) fails, the journal undoes the earlier facts (what they added to the
  state's grow-only parts is cut back by length, what they changed in place was recorded), so a rejected
  transaction leaves the state exactly as it was. Loading a whole file records nothing, since any error abandons
  the state.

This module reads lines and transactions and dispatches each fact to its rule in
:mod:`tiny_agent_core.session.rules` (one module per family: entries, tool calls, steps, operations,
compaction, usage). A rule's result is the fact it accepted, typed (:mod:`tiny_agent_core.session.fact_types`):
whoever derives something from a file's facts takes them from this walk instead of reading raw facts again:
``reduce_session(data, observer)`` hands each transaction's typed facts to ``observer`` as it goes (the ledger's
extraction, the timeline), :func:`apply_transaction` returns them, and the store passes them to its observers.

Loading is linear in the file size. Deliberate differences from the reference, all on files no writer produces:
values the reference coerces with ``String(...)`` (digests, synthetic reasons, result types) must be real strings
here; nesting deeper than Python's recursion limit is ``MALFORMED_JSON`` (the reference overflows its stack).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session.fact_types import SessionFact
from tiny_agent_core.session.framing import (
    check_committed,
    committed_length,
    next_escaped_surrogate,
    parse_line,
    parse_line_bytes,
    strip_bom,
)
from tiny_agent_core.session.rules.compaction import apply_compaction_started
from tiny_agent_core.session.rules.context import MAX_SAFE_INTEGER, FactContext
from tiny_agent_core.session.rules.entries import apply_entry
from tiny_agent_core.session.rules.header import parse_header
from tiny_agent_core.session.rules.journal import UNJOURNALED, Journal
from tiny_agent_core.session.rules.operations import (
    apply_abort_requested,
    apply_operation_finished,
    apply_run_started,
)
from tiny_agent_core.session.rules.steps import apply_step_attempt, apply_step_failed
from tiny_agent_core.session.rules.tool_calls import SYNTHETIC_CONTENT, apply_tool_started
from tiny_agent_core.session.rules.usage import apply_usage
from tiny_agent_core.session.state import SessionHeader, SessionState

__all__ = [
    "SYNTHETIC_CONTENT",
    "StagedTransaction",
    "TransactionObserver",
    "apply_transaction",
    "read_header",
    "reduce_session",
    "stage_transaction",
]

_RECORD_FACT_KEYS = frozenset({"kind", "seq", "id", "timestamp", "record"})
_RECORD_RULES: dict[str, Callable[[FactContext, dict[str, Any]], SessionFact]] = {
    "runStarted": apply_run_started,
    "compactionStarted": apply_compaction_started,
    "stepAttempt": apply_step_attempt,
    "stepFailed": apply_step_failed,
    "toolStarted": apply_tool_started,
    "abortRequested": apply_abort_requested,
    "operationFinished": apply_operation_finished,
}

TransactionObserver = Callable[[list[SessionFact]], None]
"""Hears each accepted transaction's facts, typed, in file order."""


def _apply_record(context: FactContext, fact: dict[str, Any]) -> SessionFact:
    record = fact.get("record")
    if not _RECORD_FACT_KEYS.issuperset(fact) or type(record) is not dict:
        context.fail("INVALID_FACT")
    kind = record.get("type")
    rule = _RECORD_RULES.get(kind) if type(kind) is str else None
    if rule is None:
        context.fail("INVALID_FACT")
    return rule(context, record)


def _apply_fact(context: FactContext, value: Any) -> SessionFact:
    """Apply one fact and return it typed (a message that breaks the role order sets ``context.violation``)."""
    if type(value) is not dict:
        context.fail("INVALID_FACT")
    state, index = context.state, context.index
    seq = value.get("seq")
    if type(seq) is not int or seq != state.next_seq:  # the expected int needs no further check
        seq = context.count(seq, "INVALID_FACT", 1)
    context.seq = context.fact_seq = seq
    if seq != state.next_seq:
        context.fail("SEQ_MISMATCH")
    fact_id = context.uuid(value.get("id"))
    context.fact_id = fact_id
    timestamp = value.get("timestamp")
    if type(timestamp) is not int or not 0 <= timestamp <= MAX_SAFE_INTEGER:  # the usual int needs no call
        timestamp = context.count(timestamp)
    context.timestamp = timestamp
    if fact_id in index.ids:
        context.fail("DUPLICATE_ID")
    kind = value.get("kind")
    fact: SessionFact
    if kind == "entry":  # (a JSON value equal to a string is that string: no type check needed)
        fact = apply_entry(context, value)
    elif kind == "record":
        fact = _apply_record(context, value)
    elif kind == "usage":
        fact = apply_usage(context, value)
    else:
        context.fail("INVALID_FACT")
    if fact_id in index.reserved:
        context.fail("DUPLICATE_ID")
    index.ids[fact_id] = seq  # a grow-only part, as next_seq only grows: a rollback undoes both by itself
    state.next_seq = seq + 1
    return fact


def _apply_transaction(context: FactContext, value: Any) -> list[SessionFact]:
    """Apply one transaction line's parsed value (a fact or a non-empty list of facts) at ``context.line``;
    returns its facts, typed."""
    context.seq = None
    context.violation = False
    if type(value) is not list:
        accepted = [_apply_fact(context, value)]
    elif not value:
        context.fail("EMPTY_TRANSACTION")
    else:
        accepted = []
        for fact in value:
            context.seq = None
            accepted.append(_apply_fact(context, fact))
    if context.violation:
        context.seq = context.state.next_seq - 1
        context.fail("INVALID_TRANSCRIPT")
    return accepted


class StagedTransaction:
    """A transaction applied to a state that can still be undone (the store writes it, then commits)."""

    __slots__ = ("_journal", "_state", "facts")

    def __init__(self, state: SessionState, journal: Journal, facts: list[SessionFact]) -> None:
        self._state = state
        self._journal: Journal | None = journal
        self.facts = facts
        """The transaction's facts, typed, in order."""

    def commit(self) -> None:
        """Keep the transaction (forget how to undo it)."""
        self._journal = None

    def rollback(self) -> None:
        """Undo the transaction: the state is exactly as before :func:`stage_transaction`."""
        if self._journal is None:
            raise RuntimeError("transaction already committed or rolled back")
        self._journal.rollback()
        self._journal = None


def stage_transaction(state: SessionState, line: bytes, line_no: int | None = None) -> StagedTransaction:
    """Apply one transaction line to ``state`` and return a handle that can undo it.

    Same checks and errors as :func:`apply_transaction`; on error nothing changes.
    """
    if b"\n" in line:
        raise ValueError("a transaction line must not contain LF")
    number = state.line_count + 1 if line_no is None else line_no
    journal = Journal(state)
    try:
        accepted = _apply_transaction(FactContext(state, journal, number), parse_line_bytes(line, number))
    except BaseException:
        journal.rollback()
        raise
    journal.assign(state, "line_count", number)
    journal.assign(state, "repaired_length", state.repaired_length + len(line) + 1)
    return StagedTransaction(state, journal, accepted)


def apply_transaction(state: SessionState, line: bytes, line_no: int | None = None) -> list[SessionFact]:
    """Apply one transaction line (its bytes without the LF) to ``state``, atomically; returns its facts, typed.

    On success the state advances (``line_count`` and ``repaired_length`` include the line and its LF). On any
    violation it raises :class:`SessionCorruption` with the code, line and seq the reducer would report for the
    file with this line appended, and ``state`` is exactly as before. Cost: O(size of the line).
    """
    staged = stage_transaction(state, line, line_no)
    staged.commit()
    return staged.facts


def reduce_session(data: bytes, observer: TransactionObserver | None = None) -> SessionState:
    """Reduce the bytes of a session file to its state, or raise :class:`SessionCorruption` (notes §5.3–5.7).

    Bytes after the last LF (a torn tail) are ignored; ``state.repaired_length`` says where the committed
    prefix ends. The result can be advanced with :func:`apply_transaction`. Linear in ``len(data)``; the cyclic
    garbage collector is paused meanwhile (the state is acyclic, and re-scanning it for every batch of new
    objects would make loading superlinear).

    ``observer``, if given, hears every accepted transaction's facts (typed, in file order) as the walk goes:
    this one walk is how the ledger's extraction and the timeline read a file. When the file turns out to be
    corrupt it has heard the transactions before the bad line; the error is raised all the same.
    """
    end = committed_length(data)
    try:
        return _reduce_lines(data, end, observer)
    except (SessionCorruption, UnicodeDecodeError) as error:
        # The file-wide verdicts come first (raw surrogates, then invalid UTF-8 anywhere in the committed
        # prefix); each line is decoded once, as it is read, so they are checked only when something failed.
        check_committed(data, end)
        if isinstance(error, UnicodeDecodeError):  # pragma: no cover - check_committed found the same bytes
            raise SessionCorruption("INVALID_UTF8", 1) from None
        raise


def read_header(data: bytes) -> SessionHeader:
    """The header of a session file's bytes (line 1) without reducing the rest; when line 1 is not a valid header,
    the :class:`SessionCorruption` :func:`reduce_session` raises for the whole file (its verdicts come in the
    reference's order)."""
    try:
        stop = data.index(b"\n")
        return parse_header(parse_line(strip_bom(data[:stop].decode("utf-8")), 1))
    except (SessionCorruption, UnicodeDecodeError, ValueError) as error:
        reduce_session(data)  # raises the file's verdict
        raise SessionCorruption("INVALID_HEADER", 1) from error  # pragma: no cover - the reducer raised


def _reduce_lines(data: bytes, end: int, observer: TransactionObserver | None) -> SessionState:
    """Decode and reduce the committed lines (a line that is not UTF-8 raises ``UnicodeDecodeError``)."""
    stop = data.index(b"\n")
    first = strip_bom(data[:stop].decode("utf-8"))
    if not first:
        raise SessionCorruption("MISSING_HEADER", 1)
    state = SessionState(parse_header(parse_line(first, 1)), end)
    collecting = gc.isenabled()
    gc.disable()
    context = FactContext(state, UNJOURNALED, 1)
    try:
        start = stop + 1
        escape = next_escaped_surrogate(data, start, end)
        while start < end:
            stop = data.index(b"\n", start)
            context.line += 1
            # (a bytes slice decodes faster than a memoryview's, even counting the copy)
            value = parse_line(data[start:stop].decode("utf-8"), context.line, may_hold_surrogate=escape < stop)
            if escape < stop:
                escape = next_escaped_surrogate(data, stop, end)
            accepted = _apply_transaction(context, value)
            if observer is not None:
                observer(accepted)
            start = stop + 1
    finally:
        if collecting:
            gc.enable()
    state.line_count = context.line
    return state
