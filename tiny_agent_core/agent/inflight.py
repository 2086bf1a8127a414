"""The one piece of work an operation awaits at a time — a model stream or a tool — and how abort cancels it.

An operation awaits its work through :meth:`InFlight.run`, which records the phase (``model``, ``tool`` or
``compact``) and the tool call it serves, so that an abort names them in its durable ``abortRequested`` fact.
:meth:`InFlight.cancel` sets the operation's cancel event (tools watch it) and cancels the awaited task; the
awaiting side then sees :class:`Aborted`. Each operation starts with a fresh event (:meth:`InFlight.reset`), so a
tool still holding the previous one cannot be confused by the next operation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Literal, TypeVar

T = TypeVar("T")

Phase = Literal["model", "tool", "compact"]
"""What an operation is waiting for; an abort records it."""


class Aborted(Exception):
    """The awaited work was cancelled by an abort (internal control flow, never raised to callers)."""


class InFlight:
    """The cancel event of the running operation and the task it awaits, with that task's phase and tool call."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        """Set once the operation is aborted; tools receive it to stop early."""
        self.phase: Phase = "model"
        self.call_id: str | None = None
        """The tool call the awaited work serves (``tool`` phase only)."""
        self._task: asyncio.Task[Any] | None = None

    @property
    def cancelled(self) -> bool:
        """True once the running operation was aborted."""
        return self.event.is_set()

    def reset(self) -> None:
        """Start a new operation: a fresh cancel event, nothing awaited."""
        self.event = asyncio.Event()
        self._task = None

    def cancel(self) -> None:
        """Abort: set the cancel event and cancel the awaited task, if any."""
        self.event.set()
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def run(self, phase: Phase, work: Awaitable[T], call_id: str | None = None) -> T:
        """Await ``work`` as a task that :meth:`cancel` can cancel; raise :class:`Aborted` if it was."""
        if self.event.is_set():
            if asyncio.iscoroutine(work):
                work.close()
            raise Aborted
        self.phase, self.call_id = phase, call_id
        task: asyncio.Task[T] = asyncio.ensure_future(work)
        self._task = task
        try:
            return await task
        except asyncio.CancelledError:
            if self.event.is_set() and task.cancelled():
                raise Aborted from None
            task.cancel()
            raise
        finally:
            self._task = None
            self.phase, self.call_id = "model", None
