"""Loading a session for the window off the GUI thread, and keeping the last few closed ones ready to reopen.

:func:`load_session` runs in a worker thread: it opens the store (lock, read, strict validation — one walk over the
file that also feeds the timeline) and builds the timeline with the ledger's request facts; the GUI thread never
reads a session file. A long session takes a while (a 5,000-message file about a third of a second here), so the
window also keeps what it built for the sessions it closed last (:class:`KeptSessions`): the store's
:class:`~tiny_agent_core.session.store.SessionSnapshot` and the timeline. Reopening one of them reuses both when the
file's committed bytes are exactly the ones the snapshot was validated from (a SHA-256 comparison, a few
milliseconds), so going back to a session is as quick as the first paint; a file that changed meanwhile, even by one
appended line, is read and validated again from scratch. Nothing shown was not validated.

:func:`warm_session` fills the same cache ahead of an open: when the user points at a session in the list (the
mouse rests on it, or the keyboard moves to it) the window reads it read-only — no lock, so a writer elsewhere is not
disturbed — and keeps the result, so the click that follows finds it ready.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sqlite3
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from tiny_agent_core.errors import SessionChangedError, TinyAgentError
from tiny_agent_core.ledger import connect
from tiny_agent_core.ledger.requests import RequestRow, session_requests
from tiny_agent_core.session.fact_types import SessionFact
from tiny_agent_core.session.store import SessionSnapshot, SessionStore
from tiny_agent_core.timeline import Timeline
from tiny_agent_core.workbench import OpenedSession, open_read_only, open_session

__all__ = [
    "KEPT_BYTES",
    "KEPT_SESSIONS",
    "KeptSession",
    "KeptSessions",
    "LoadedSession",
    "close_loaded",
    "load_session",
    "request_rows",
    "warm_session",
]

_log = logging.getLogger(__name__)

KEPT_SESSIONS = 4
"""Most closed sessions :class:`KeptSessions` holds."""
KEPT_BYTES = 8 << 20
"""Most committed file bytes the kept sessions may add up to: their states and timelines take two to four times that
in memory, and a 5,000-message session (about 7 MB) should still fit."""


class KeptSession(NamedTuple):
    """A closed session's store snapshot and the timeline built for it."""

    snapshot: SessionSnapshot
    timeline: Timeline


class LoadedSession(NamedTuple):
    """What :func:`load_session` hands to the GUI thread."""

    session: OpenedSession
    timeline: Timeline
    reused: bool
    """Whether the timeline is a kept one: the ledger may know more of its steps than when it was closed (a cost
    repriced), so the GUI thread applies :func:`request_rows` to it again, after the first paint (the timeline may
    still be shown, so only the GUI thread changes it). A new timeline has them already."""


class KeptSessions:
    """The last closed sessions, newest last, within :data:`KEPT_SESSIONS` and :data:`KEPT_BYTES`."""

    def __init__(self) -> None:
        self._kept: OrderedDict[Path, KeptSession] = OrderedDict()

    def keep(self, snapshot: SessionSnapshot, timeline: Timeline) -> None:
        """Keep a closed session (dropping the oldest ones beyond the limits)."""
        self._kept.pop(snapshot.path, None)
        self._kept[snapshot.path] = KeptSession(snapshot, timeline)
        while len(self._kept) > KEPT_SESSIONS or self.kept_bytes() > KEPT_BYTES:
            self._kept.popitem(last=False)

    def __contains__(self, path: object) -> bool:
        return path in self._kept

    def take(self, path: Path) -> KeptSession | None:
        """The kept session of ``path``, no longer kept (a snapshot is reused at most once), or ``None``."""
        return self._kept.pop(path, None)

    def kept_bytes(self) -> int:
        """The committed file bytes of the kept sessions."""
        return sum(kept.snapshot.state.repaired_length for kept in self._kept.values())

    def __len__(self) -> int:
        return len(self._kept)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: the reducer and the timeline allocate many small acyclic objects, and
    collections of the growing heap would cost a third of the timeline's build time."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def load_session(path: Path, database: Path | None, kept: KeptSession | None) -> LoadedSession:
    """Open ``path`` and build its timeline, with the ledger's request facts when there is an index (``database``);
    reuse ``kept`` when the file is unchanged since it was closed.

    Runs in a worker thread: the store it opens is handed to the GUI thread, and the index is read on a connection
    of this thread's own. A ledger that cannot be read leaves the steps' live-only facts unknown (logged); it does
    not keep the session from opening.
    """
    relay = _Relay()
    with _collector_paused():
        try:
            session = open_session(path, observer=relay, resume=kept.snapshot if kept is not None else None)
        except SessionChangedError as error:  # a command line is writing it: read-only, heard again from the start
            relay, kept = _Relay(), None
            session = open_read_only(path, f"{error} It is shown read-only meanwhile.", observer=relay)
        try:
            if kept is not None and session.store.resumed:
                relay.follow(kept.timeline)  # it heard nothing: only later commits
                return LoadedSession(session, kept.timeline, True)
            timeline = Timeline(session.store.state.header)
            relay.follow(timeline)
            _enrich(timeline, request_rows(database, session.store))
        except BaseException:
            session.store.close()
            raise
    return LoadedSession(session, timeline, False)


def warm_session(path: Path, database: Path | None) -> KeptSession | None:
    """Read ``path`` read-only, validate it and build its timeline, closed and ready for :class:`KeptSessions`; ``None``
    for a file larger than :data:`KEPT_BYTES` (it would not be kept). Runs in a worker thread; raises as
    :meth:`SessionStore.open` does."""
    if path.stat().st_size > KEPT_BYTES:
        return None
    with _collector_paused():
        store, timeline = Timeline.open_store(path, read_only=True, resumable=True)
        try:
            _enrich(timeline, request_rows(database, store))
        finally:
            snapshot = store.close_keeping()
    assert snapshot is not None  # opened resumable, closed here
    return KeptSession(snapshot, timeline)


def _enrich(timeline: Timeline, rows: list[RequestRow]) -> None:
    """Give ``timeline``'s steps their live-only facts from the ledger's rows."""
    for row in rows:
        timeline.enrich_request(row)


def request_rows(database: Path | None, store: SessionStore) -> list[RequestRow]:
    """The ledger's rows of ``store``'s requests, read on a connection of the calling (worker) thread's own; none
    without an index or when it cannot be read (logged: the steps' live-only facts stay unknown)."""
    if database is None:
        return []
    try:
        conn = connect(database, migrate=False)
        try:
            return session_requests(conn, store.session_id)
        finally:
            conn.close()
    except (TinyAgentError, sqlite3.Error) as error:
        _log.warning("the index could not add request facts to %s: %s", store.path.name, error)
        return []


def close_loaded(loading: asyncio.Future[LoadedSession]) -> None:
    """A superseded open finished in its worker thread: release the session it opened."""
    if not loading.cancelled() and loading.exception() is None:
        loading.result().session.store.close()


class _Relay:
    """A commit observer that keeps the transactions a store reads while it opens (the timeline needs the store's
    header first), then hands them and every later commit to the timeline."""

    def __init__(self) -> None:
        self._heard: list[list[SessionFact]] | None = []
        self._timeline: Timeline | None = None

    def __call__(self, facts: list[SessionFact]) -> None:
        if self._timeline is not None:
            self._timeline.apply(facts)
        else:
            assert self._heard is not None
            self._heard.append(facts)

    def follow(self, timeline: Timeline) -> None:
        """Apply what was heard to ``timeline``, then keep it current."""
        assert self._heard is not None
        for facts in self._heard:
            timeline.apply(facts)
        self._heard = None
        self._timeline = timeline
