"""The context every rule works in: one fact being applied to one state, and the checks on its values.

A :class:`FactContext` carries the state, its index, the journal and where the fact is (line, seq, id), so a
rule takes ``(context, value)`` and a failed check raises :class:`SessionCorruption` with the right position.
Every check returns the value it accepted, typed, and fails with ``INVALID_FACT`` unless told otherwise.

The rules of the most frequent facts (messages, tool calls and results, steps, usage) write the simplest checks
inline instead (``if type(value) is not str or not value: context.fail("INVALID_FACT")``): a load makes one such
check per field of every fact, and a Python call costs as much as the check itself. A reference to an id goes
through :meth:`FactContext.known`, which probes the table it names before checking the id's pattern.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NoReturn, TypeVar

from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session.rules.journal import Journal
from tiny_agent_core.session.state import CompactionOperation, RunOperation, SessionIndex, SessionState

__all__ = ["MAX_SAFE_INTEGER", "FactContext", "Reservations", "ValueChecks", "is_uuid7"]

MAX_SAFE_INTEGER = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``: the largest count, timestamp or token total a fact may carry."""

_HEX_TO_ZERO = bytes.maketrans(b"123456789abcdef", b"000000000000000")
_UUID_SHAPE = b"00000000-0000-0000-0000-000000000000"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}").fullmatch
_ERROR_KEYS = frozenset({"code", "message"})

_Found = TypeVar("_Found")


def is_uuid7(value: str) -> bool:
    """Whether ``value`` is a lowercase UUIDv7: ``[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}``.

    Without a regex: one C pass maps every lowercase hex digit of the ASCII bytes to ``0`` (any other byte stays
    itself, so it cannot match), and the result must be the UUID's shape; then the version and variant digits.
    A load checks every new id (~150,000 for 110,000 facts), and this is ~2× faster than the pattern's
    ``fullmatch``; the two are tested equal.
    """
    return (
        value.isascii()
        and value.encode().translate(_HEX_TO_ZERO) == _UUID_SHAPE
        and value[14] == "7"
        and value[19] in "89ab"
    )


Reservations = dict[str, str]
"""Ids a fact pre-allocates, with what each is for; committed together once the whole fact is valid."""


class ValueChecks:
    """Checks on the values of one line, failing at that line (and seq, once known)."""

    __slots__ = ("line", "seq")

    def __init__(self, line: int) -> None:
        self.line = line
        self.seq: int | None = None
        """The fact's ``seq`` once it has been read (``None`` before, and for the header)."""

    def fail(self, code: str) -> NoReturn:
        """Reject the fact with ``code`` at its line and seq."""
        raise SessionCorruption(code, self.line, self.seq)

    def object(self, value: Any, code: str = "INVALID_FACT") -> dict[str, Any]:
        """A JSON object."""
        if type(value) is not dict:
            self.fail(code)
        return value

    def only_keys(self, value: dict[str, Any], allowed: frozenset[str], code: str = "INVALID_FACT") -> None:
        """No key outside ``allowed`` (missing keys are each field's own check)."""
        if not allowed.issuperset(value):
            self.fail(code)

    def string(self, value: Any, code: str = "INVALID_FACT") -> str:
        """A non-empty string."""
        if type(value) is not str or not value:
            self.fail(code)
        return value

    def count(self, value: Any, code: str = "INVALID_FACT", minimum: int = 0) -> int:
        """A safe integer ≥ ``minimum`` (JSON may write it as ``2.0``)."""
        kind = type(value)
        if kind is int:
            if minimum <= value <= MAX_SAFE_INTEGER:
                return int(value)
        elif kind is float and value.is_integer() and minimum <= value <= MAX_SAFE_INTEGER:
            return int(value)
        self.fail(code)

    def uuid(self, value: Any, code: str = "INVALID_FACT") -> str:
        """A lowercase UUIDv7."""
        if type(value) is not str or not is_uuid7(value):
            self.fail(code)
        return value

    def digest(self, value: Any) -> str:
        """A ``sha256:`` digest."""
        if type(value) is not str or _DIGEST(value) is None:
            self.fail("INVALID_FACT")
        return value

    def choice(self, value: Any, allowed: frozenset[str], code: str = "INVALID_FACT") -> str:
        """One of ``allowed`` (a string)."""
        if type(value) is not str or value not in allowed:
            self.fail(code)
        return value


class FactContext(ValueChecks):
    """One fact being checked and applied: where it is, and the state it changes (through the journal)."""

    __slots__ = ("fact_id", "fact_seq", "index", "journal", "state", "timestamp", "violation")

    def __init__(self, state: SessionState, journal: Journal, line: int) -> None:
        super().__init__(line)
        self.state = state
        self.index: SessionIndex = state.index
        self.journal = journal
        self.fact_id = ""
        """The fact's ``id`` once it has been read."""
        self.fact_seq = 0
        """The fact's ``seq`` once it has been read (``seq`` is reset between facts, for error positions)."""
        self.timestamp = 0
        """The fact's ``timestamp`` once it has been read."""
        self.violation = False
        """Whether a message of the transaction so far broke the transcript's role order (reported once the whole
        transaction has been applied, as the reference validates the transcript after each transaction)."""

    def reserve(self, value: Any, reservations: Reservations, kind: str = "identity") -> str:
        """A new pre-allocated id: unused so far, and not already reserved by this fact."""
        if type(value) is not str or not is_uuid7(value):  # (a new id: probing the state first would not help)
            self.fail("INVALID_FACT")
        index = self.index
        if value in index.ids or value in index.reserved or value in reservations:
            self.fail("DUPLICATE_ID")
        reservations[value] = kind
        return value

    def uuid(self, value: Any, code: str = "INVALID_FACT") -> str:
        """A lowercase UUIDv7. A reserved id was checked when it was reserved, so one (a step's id, a tool result's
        entry id) costs a probe instead of a pattern match; a reference to a committed fact's id goes through
        :meth:`known`, which probes the table it names."""
        if type(value) is str and (value in self.index.reserved or is_uuid7(value)):
            return value
        self.fail(code)

    def known(self, table: Mapping[str, _Found], value: Any) -> tuple[str, _Found | None]:
        """The id ``value`` (a lowercase UUIDv7, else ``INVALID_FACT``) and what ``table`` holds for it, or ``None``.

        ``table`` is one of the index's tables, keyed by ids checked when they came in, so it is probed first and
        the pattern is checked only when the id is not there: a reference to a known id costs one probe.
        """
        found = table.get(value) if type(value) is str else None
        if found is None:
            self.uuid(value)
        return value, found

    def commit_reservations(self, reservations: Reservations) -> None:
        """Record the fact's reserved ids in the state (call once the fact is known to be valid)."""
        self.journal.put_all(self.index.reserved, reservations)

    def open_operation(self, value: Any) -> RunOperation | CompactionOperation:
        """The started, unfinished operation named by ``value``."""
        found = self.index.operations.get(value) if type(value) is str else None
        if found is None:
            self.uuid(value)  # a malformed id is INVALID_FACT; an operation's id was checked when it started
            self.fail("INVALID_REFERENCE")
        if found.finished:
            self.fail("INVALID_TRANSITION")
        return found

    def current_run(self) -> RunOperation | None:
        """The active operation if it is a run."""
        operation = self.state.operation
        return operation if type(operation) is RunOperation else None

    def check_error(self, value: Any) -> tuple[str, str]:
        """An ``{"code", "message"}`` error object of non-empty strings; returns ``(code, message)``."""
        error = self.object(value)
        self.only_keys(error, _ERROR_KEYS)
        return self.string(error.get("code")), self.string(error.get("message"))
