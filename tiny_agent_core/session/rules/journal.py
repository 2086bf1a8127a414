"""How the reducer's rules change a state: every change goes through a :class:`Journal`.

A transaction applied to a live state (:func:`~tiny_agent_core.session.reducer.stage_transaction`) records an
undo step for each change, so a rejected transaction can be rolled back exactly. Loading a whole file uses
:data:`UNJOURNALED`, which makes the same changes without recording them (any error abandons that state).
"""

from __future__ import annotations

from typing import Any

__all__ = ["UNJOURNALED", "Journal"]

# Undo steps: (code, container, key[, old value]), replayed in reverse.
_DELETE_KEY, _DISCARD, _POP, _RESTORE_ATTRIBUTE, _RESTORE_ITEM, _ADD_BACK = range(6)


class Journal:
    """An undo log: each method makes one change and records how to undo it."""

    __slots__ = ("_undo",)

    def __init__(self) -> None:
        self._undo: list[tuple[Any, ...]] = []

    def assign(self, target: Any, name: str, value: Any) -> None:
        """``target.name = value``."""
        self._undo.append((_RESTORE_ATTRIBUTE, target, name, getattr(target, name)))
        setattr(target, name, value)

    def put(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        """``mapping[key] = value`` for a key not in ``mapping``."""
        mapping[key] = value
        self._undo.append((_DELETE_KEY, mapping, key))

    def remove(self, mapping: dict[Any, Any], key: Any) -> None:
        """``del mapping[key]``."""
        self._undo.append((_RESTORE_ITEM, mapping, key, mapping[key]))
        del mapping[key]

    def add(self, values: set[Any], item: Any) -> None:
        """``values.add(item)`` for an item not in ``values``."""
        values.add(item)
        self._undo.append((_DISCARD, values, item))

    def discard(self, values: set[Any], item: Any) -> None:
        """``values.remove(item)`` for an item in ``values``."""
        values.remove(item)
        self._undo.append((_ADD_BACK, values, item))

    def append(self, values: list[Any], item: Any) -> None:
        """``values.append(item)``."""
        values.append(item)
        self._undo.append((_POP, values))

    def rollback(self) -> None:
        """Undo every recorded change, newest first, and forget them."""
        for step in reversed(self._undo):
            code, container = step[0], step[1]
            if code == _DELETE_KEY:
                del container[step[2]]
            elif code == _DISCARD:
                container.discard(step[2])
            elif code == _POP:
                container.pop()
            elif code == _RESTORE_ATTRIBUTE:
                setattr(container, step[2], step[3])
            elif code == _RESTORE_ITEM:
                container[step[2]] = step[3]
            else:  # _ADD_BACK
                container.add(step[2])
        self._undo.clear()


class _Unjournaled(Journal):
    """The same changes, not recorded (for loading a file, where an error abandons the state)."""

    __slots__ = ()

    def assign(self, target: Any, name: str, value: Any) -> None:
        """``target.name = value``."""
        setattr(target, name, value)

    def put(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        """``mapping[key] = value``."""
        mapping[key] = value

    def remove(self, mapping: dict[Any, Any], key: Any) -> None:
        """``del mapping[key]``."""
        del mapping[key]

    def add(self, values: set[Any], item: Any) -> None:
        """``values.add(item)``."""
        values.add(item)

    def discard(self, values: set[Any], item: Any) -> None:
        """``values.remove(item)``."""
        values.remove(item)

    def append(self, values: list[Any], item: Any) -> None:
        """``values.append(item)``."""
        values.append(item)

    def rollback(self) -> None:
        """Nothing was recorded: a state loaded without a journal cannot be rolled back."""
        raise RuntimeError("changes made without a journal cannot be rolled back")


UNJOURNALED: Journal = _Unjournaled()
"""The journal that records nothing (shared: it holds no state)."""
