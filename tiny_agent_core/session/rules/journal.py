"""How the reducer's rules change a state, so that a transaction can be undone: the :class:`Journal`.

A transaction changes a state in two ways:

* it *adds* to the state's grow-only parts (:meth:`~tiny_agent_core.session.state.SessionState.grow_only_parts`:
  the transcript and the other logs it appends to, the index's tables it inserts new keys into, never changing or
  removing one) and advances ``next_seq``. Rules write these directly; a rollback cuts each part back to its
  length before the transaction (a list by slicing, a dict by ``popitem``, which removes its newest key);
* it moves the index's running values on (``active_through``, ``pending_calls``, ``usage_totals``: nearly every
  fact changes one). Rules write these directly too; the journal keeps their values from before the transaction
  (a copy of the small pending set) and a rollback puts them back, as it does ``next_seq``;
* it changes other things *in place* (attributes, the reserved ids, a step's attempts, a run's tool calls). Each
  such change goes through a method of the journal, which records how to undo it.

A transaction applied to a live state (:func:`~tiny_agent_core.session.reducer.stage_transaction`) gets a
:class:`Journal`, so a rejected transaction is rolled back exactly. Loading a whole file uses
:data:`UNJOURNALED`, which makes the same in-place changes without recording them (any error abandons that
state): a load of 110,000 facts then makes ~270,000 journal calls instead of ~930,000.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tiny_agent_core.session.state import SessionState

__all__ = ["UNJOURNALED", "Journal"]

# Undo steps: (code, container, key[, old value]), replayed in reverse.
_DELETE_KEY, _POP, _RESTORE_ATTRIBUTE, _RESTORE_ITEM = range(4)


class Journal:
    """The undo log of one transaction on ``state``: the lengths of its grow-only parts, its ``next_seq`` and the
    index's running values when the transaction starts, and an undo step for each in-place change (each method
    makes one change and records how to undo it)."""

    __slots__ = ("_lengths", "_next_seq", "_running", "_state", "_undo")

    def __init__(self, state: SessionState) -> None:
        self._undo: list[tuple[Any, ...]] = []
        self._state = state
        self._next_seq = state.next_seq
        self._lengths = [(part, len(part)) for part in state.grow_only_parts()]
        index = state.index
        self._running = (index.active_through, set(index.pending_calls), index.usage_totals)

    def assign(self, target: Any, name: str, value: Any) -> None:
        """``target.name = value``."""
        self._undo.append((_RESTORE_ATTRIBUTE, target, name, getattr(target, name)))
        setattr(target, name, value)

    def put(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        """``mapping[key] = value`` for a key not in ``mapping``."""
        mapping[key] = value
        self._undo.append((_DELETE_KEY, mapping, key))

    def put_all(self, mapping: dict[Any, Any], items: dict[Any, Any]) -> None:
        """``mapping.update(items)`` for keys not in ``mapping``."""
        for key, value in items.items():
            self.put(mapping, key, value)

    def remove(self, mapping: dict[Any, Any], key: Any) -> None:
        """``del mapping[key]``."""
        self._undo.append((_RESTORE_ITEM, mapping, key, mapping[key]))
        del mapping[key]

    def append(self, values: list[Any], item: Any) -> None:
        """``values.append(item)``."""
        values.append(item)
        self._undo.append((_POP, values))

    def rollback(self) -> None:
        """Undo the transaction: every recorded change, newest first, then cut the grow-only parts back to their
        lengths (as they were before it, since it only added to them) and restore ``next_seq`` and the running
        values."""
        for step in reversed(self._undo):
            code, container = step[0], step[1]
            if code == _DELETE_KEY:
                del container[step[2]]
            elif code == _POP:
                container.pop()
            elif code == _RESTORE_ATTRIBUTE:
                setattr(container, step[2], step[3])
            else:  # _RESTORE_ITEM
                container[step[2]] = step[3]
        self._undo.clear()
        for part, length in self._lengths:
            if isinstance(part, list):
                del part[length:]
            else:
                while len(part) > length:
                    part.popitem()
        self._state.next_seq = self._next_seq
        index = self._state.index
        index.active_through, index.pending_calls, index.usage_totals = self._running


class _Unjournaled(Journal):
    """The same changes, not recorded (for loading a file, where an error abandons the state)."""

    __slots__ = ()

    def __init__(self) -> None:  # of no state: it records nothing
        pass

    def assign(self, target: Any, name: str, value: Any) -> None:
        """``target.name = value``."""
        setattr(target, name, value)

    def put(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        """``mapping[key] = value``."""
        mapping[key] = value

    def put_all(self, mapping: dict[Any, Any], items: dict[Any, Any]) -> None:
        """``mapping.update(items)``."""
        mapping.update(items)

    def remove(self, mapping: dict[Any, Any], key: Any) -> None:
        """``del mapping[key]``."""
        del mapping[key]

    def append(self, values: list[Any], item: Any) -> None:
        """``values.append(item)``."""
        values.append(item)

    def rollback(self) -> None:
        """Nothing was recorded: a state loaded without a journal cannot be rolled back."""
        raise RuntimeError("changes made without a journal cannot be rolled back")


UNJOURNALED: Journal = _Unjournaled()
"""The journal that records nothing (shared: it holds no state)."""
