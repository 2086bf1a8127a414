"""The core's front door: one :class:`Workbench` over a data folder opens and creates sessions, builds agents,
keeps the index current and says what sessions are called and what they cost. No Qt.

A library user needs nothing else::

    with Workbench(data_folder) as bench:
        session = bench.create_session(workspace, profile, model)
        async with ProviderClient() as client:
            agent = bench.agent(session, client=client, profile=profile, model=model, api_key=key)
            result = await agent.run("Say hello")
        summary = bench.index(session)          # title, usage and cost, as the session list shows them

The window (``tiny_agent_gui``) goes through it, compare runs use its pieces on copies of a workspace, and
``tiny-agent run`` sums costs the same way. The rules:

* Opening a session another window or a CLI is writing gives a read-only view with the reason, never an error: the
  user can still read it (:func:`open_session`).
* An agent records every request in the ledger (when the workbench has one) as it commits, so costs are known per
  request (:func:`build_agent`).
* After a run the session's index row (title, tokens, state, cost) is brought up to date on a connection of its
  own (:meth:`Workbench.index`, :meth:`Workbench.refresh_index`), so it may run in a worker thread; a failure
  there never fails the run — the session file has everything and ``tiny-agent index rebuild`` catches up.
* Costs are summed by :class:`~tiny_agent_core.cost_sums.CostSum`: known costs added, unknown ones counted apart.

The module functions are the stateless pieces the workbench composes; :class:`Workbench` adds the data folder
and its index.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from tiny_agent_core.agent.events import EventSink
from tiny_agent_core.agent.loop import DEFAULT_MAX_STEPS, Agent, RequestRecord, RequestRecorder
from tiny_agent_core.agent.recording import LedgerRecorder
from tiny_agent_core.cost_sums import CostSum
from tiny_agent_core.errors import SessionLockedError, TinyAgentError
from tiny_agent_core.ledger.database import connect, opened
from tiny_agent_core.ledger.index import (
    ScanReport,
    SessionSummary,
    get_session,
    index_session_file,
    list_sessions,
    scan_workspace,
)
from tiny_agent_core.ledger.requests import session_requests
from tiny_agent_core.paths import DATABASE_NAME, data_dir
from tiny_agent_core.pricing import Overrides
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.providers.transport import Timeouts
from tiny_agent_core.session.store import CommitObserver, SessionSnapshot, SessionStore, find_session
from tiny_agent_core.tools.approval import ApprovalAnswer, ApprovalPolicy, ApprovalRequest, Approver, ToolSettings
from tiny_agent_core.tools.base import Tool
from tiny_agent_core.tools.registry import builtin_tools

__all__ = [
    "OpenedSession",
    "Workbench",
    "build_agent",
    "create_session",
    "open_read_only",
    "open_session",
    "session_tools",
]

_log = logging.getLogger(__name__)


@dataclass
class OpenedSession:
    """An open session: its store, and why it is read-only when it is."""

    store: SessionStore
    read_only_reason: str | None = None
    """Why the session could only be opened read-only (another writer holds it); ``None`` when writable."""

    @property
    def workspace(self) -> Path:
        """The workspace the session works in: its header's ``cwd`` (what the writer ran in) when that folder
        exists here, else the folder holding its ``.tiny-agent/sessions/``."""
        return self.store.workspace

    @property
    def read_only(self) -> bool:
        """True when prompts cannot be sent in this session."""
        return self.store.read_only

    def close(self) -> None:
        """Close the session's store (releasing the writer's lock); closing again does nothing."""
        self.store.close()


def open_session(
    path: Path, *, observer: CommitObserver | None = None, resume: SessionSnapshot | None = None
) -> OpenedSession:
    """Open ``path`` for writing, or read-only with the reason when another window or process is writing it.

    ``observer`` hears every committed transaction as the file is read, then every later commit (see
    :meth:`SessionStore.open`: one walk over the file). The store is resumable: closing it with
    :meth:`SessionStore.close_keeping` gives a snapshot that ``resume`` takes to reopen the unchanged file without
    reading its transactions again (``store.resumed``; the observer then hears only later commits). Raises
    :class:`~tiny_agent_core.errors.SessionCorruption` for a corrupt file.
    """
    try:
        return OpenedSession(SessionStore.open(path, observer=observer, resumable=True, resume=resume))
    except SessionLockedError:  # refused before the file was read: the observer has heard nothing
        reason = (
            "This session is open for writing in another window or process. It is shown read-only; close it there "
            "to continue here."
        )
        return open_read_only(path, reason, observer=observer, resume=resume)


def open_read_only(
    path: Path, reason: str, *, observer: CommitObserver | None = None, resume: SessionSnapshot | None = None
) -> OpenedSession:
    """Open ``path`` read-only (resumable), saying ``reason`` why; ``observer`` and ``resume`` as :func:`open_session`
    takes them. Also for a caller whose :func:`open_session` was refused after its observer had heard the file (a
    :class:`~tiny_agent_core.errors.SessionChangedError`: another program is writing it), with a fresh observer."""
    store = SessionStore.open(path, read_only=True, observer=observer, resumable=True, resume=resume)
    return OpenedSession(store, reason)


def create_session(workspace: Path, profile: ProviderProfile, model: str) -> OpenedSession:
    """A new session in ``workspace`` for ``profile`` and ``model``; resumable, as :func:`open_session` opens them."""
    return OpenedSession(SessionStore.create(workspace, model=model, provider=profile.id, resumable=True))


def session_tools(session: OpenedSession, tool_settings: ToolSettings, *, network: bool = True) -> list[Tool]:
    """The built-in tools for a session's workspace, within the roots the user allowed for it; ``network=False``
    runs ``bash`` and ``bg`` without network (where the sandbox can cut it)."""
    workspace = session.workspace
    return builtin_tools(workspace, allowed_roots=tool_settings.allowed_roots(workspace), network=network)


def _both(first: RequestRecorder, second: RequestRecorder) -> RequestRecorder:
    def record(request: RequestRecord) -> None:
        first(request)
        second(request)

    return record


def build_agent(
    session: OpenedSession,
    *,
    client: ProviderClient,
    profile: ProviderProfile,
    model: str,
    api_key: str | None,
    approver: Approver,
    tool_settings: ToolSettings,
    on_event: EventSink,
    ledger: sqlite3.Connection | None = None,
    price_overrides: Overrides | None = None,
    tools: Sequence[Tool] | None = None,
    timeouts: Timeouts | None = None,
    max_steps: int | None = DEFAULT_MAX_STEPS,
    also_record: RequestRecorder | None = None,
    policy: ApprovalPolicy | None = None,
) -> Agent:
    """An agent for a writable session: ``tools`` (default: the built-ins within the workspace's allowed roots —
    pass the same tools again when rebuilding an agent, so background processes keep their owner), the approval
    policy over ``tool_settings`` (standing permissions), the ledger recorder when ``ledger`` is given, at most
    ``max_steps`` model steps per run; ``also_record`` receives every request record too (after the ledger);
    ``policy`` replaces the approval policy (e.g. :func:`~tiny_agent_core.tools.approval.non_interactive`'s)."""
    workspace = session.workspace
    recorder: RequestRecorder | None = None
    if ledger is not None:
        recorder = LedgerRecorder(ledger, session.store.path, workspace, secrets=[api_key] if api_key else [])
    if also_record is not None:
        recorder = also_record if recorder is None else _both(recorder, also_record)
    return Agent(
        store=session.store,
        client=client,
        profile=profile,
        model=model,
        workspace=workspace,
        tools=tools if tools is not None else session_tools(session, tool_settings),
        policy=policy if policy is not None else ApprovalPolicy(tool_settings),
        approver=approver,
        api_key=api_key,
        timeouts=timeouts,
        on_event=on_event,
        record_request=recorder,
        price_overrides=price_overrides,
        max_steps=max_steps,
    )


class Workbench:
    """Sessions, agents, the index, titles and costs over one data folder (see the module docstring).

    ``Workbench(folder)`` keeps its index database in ``folder`` (created, mode 0700, if missing; default: the
    user data folder, :func:`~tiny_agent_core.paths.data_dir`) and opens it on first use; :meth:`over` wraps a
    connection the caller already has (or none: sessions and agents without an index). Close it (or use it as a
    context manager) to close the index it opened. Its methods are called from one thread, except :meth:`index`,
    which uses a connection of its own.
    """

    def __init__(self, data_folder: str | os.PathLike[str] | None = None) -> None:
        """A workbench whose index is ``<data_folder>/index.sqlite3``."""
        folder = Path(data_folder) if data_folder is not None else data_dir()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._database: Path | None = folder / DATABASE_NAME
        self._ledger: sqlite3.Connection | None = None
        self._owns_ledger = True

    @classmethod
    def over(cls, ledger: sqlite3.Connection | None) -> Workbench:
        """A workbench over an index connection the caller opened and closes (``None``: no index at all — agents
        record nothing, :meth:`index` and :meth:`summary` answer ``None``)."""
        bench = cls.__new__(cls)
        bench._ledger = ledger
        bench._owns_ledger = False
        bench._database = None if ledger is None else Path(ledger.execute("PRAGMA database_list").fetchone()[2])
        return bench

    @property
    def database(self) -> Path | None:
        """The index database file; ``None`` for a workbench without an index."""
        return self._database

    @property
    def ledger(self) -> sqlite3.Connection | None:
        """The index connection (opened now if it is not yet; migrations applied); ``None`` without an index."""
        if self._ledger is None and self._owns_ledger and self._database is not None:
            self._ledger = connect(self._database)
        return self._ledger

    def close(self) -> None:
        """Close the index connection if this workbench opened it."""
        if self._owns_ledger and self._ledger is not None:
            self._ledger.close()
            self._ledger = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    # -- sessions ---------------------------------------------------------------------------------------------

    def create_session(self, workspace: str | os.PathLike[str], profile: ProviderProfile, model: str) -> OpenedSession:
        """A new session in ``workspace`` (its ``.tiny-agent/sessions/``) for ``profile`` and ``model``."""
        return create_session(Path(workspace), profile, model)

    def open_session(
        self,
        path: str | os.PathLike[str],
        *,
        observer: CommitObserver | None = None,
        resume: SessionSnapshot | None = None,
    ) -> OpenedSession:
        """The session file ``path``, writable or read-only with the reason; ``resume`` reopens it from a snapshot
        of its closed store when the file is unchanged (:func:`open_session`)."""
        return open_session(Path(path), observer=observer, resume=resume)

    def find_session(self, workspace: str | os.PathLike[str], session_id: str) -> OpenedSession:
        """Session ``session_id`` of ``workspace``, found as ``tiny-agent run --session`` finds it, then opened.

        Raises :class:`~tiny_agent_core.errors.SessionError` when the id is invalid, unknown or ambiguous.
        """
        return open_session(find_session(workspace, session_id))

    # -- agents -----------------------------------------------------------------------------------------------

    def agent(
        self,
        session: OpenedSession,
        *,
        client: ProviderClient,
        profile: ProviderProfile,
        model: str,
        api_key: str | None = None,
        on_event: EventSink | None = None,
        approver: Approver | None = None,
        tool_settings: ToolSettings | None = None,
        policy: ApprovalPolicy | None = None,
        tools: Sequence[Tool] | None = None,
        extra_tools: Sequence[Tool] = (),
        price_overrides: Overrides | None = None,
        timeouts: Timeouts | None = None,
        max_steps: int | None = DEFAULT_MAX_STEPS,
        also_record: RequestRecorder | None = None,
    ) -> Agent:
        """An agent for the writable ``session`` whose requests go to the index (see :func:`build_agent`).

        ``tools`` defaults to the built-ins within the workspace's allowed roots (pass the same list again when
        rebuilding an agent, so background processes keep their owner); ``extra_tools`` (e.g. MCP servers' tools)
        are offered after them. The approval policy is the window's (reading inside the workspace runs without
        asking; ``tool_settings`` add standing permissions, default none, kept in memory); without an ``approver``
        every call the policy would ask about is denied, the model being told why.
        """
        settings = tool_settings if tool_settings is not None else ToolSettings.in_memory()
        offered = list(tools) if tools is not None else session_tools(session, settings)
        return build_agent(
            session,
            client=client,
            profile=profile,
            model=model,
            api_key=api_key,
            approver=approver if approver is not None else _NOBODY,
            tool_settings=settings,
            on_event=on_event if on_event is not None else _ignore,
            ledger=self.ledger,
            price_overrides=price_overrides,
            tools=[*offered, *extra_tools],
            timeouts=timeouts,
            max_steps=max_steps,
            also_record=also_record,
            policy=policy,
        )

    # -- the index: titles and costs --------------------------------------------------------------------------

    def index(self, session: OpenedSession | str | os.PathLike[str]) -> SessionSummary | None:
        """Bring the index row of ``session`` (an open session or its file) up to date with its file, and return it
        (title, usage, cost and unknown costs); ``None`` without an index.

        It re-reads the whole file on a connection of its own, so it may run in a worker thread. Raises
        :class:`~tiny_agent_core.errors.SessionCorruption` for a corrupt file, ``LedgerError`` for an unusable index.
        """
        if self._database is None:
            return None
        path = session.store.path if isinstance(session, OpenedSession) else Path(session)
        with opened(self._database) as conn:
            return index_session_file(conn, path)

    def index_workspace(self, workspace: str | os.PathLike[str]) -> ScanReport:
        """Bring the index up to date with ``workspace``'s session files (new, changed and removed ones; corrupt
        files are listed in the report, not raised) and remember the folder; an empty report without an index."""
        ledger = self.ledger
        return ScanReport() if ledger is None else scan_workspace(ledger, Path(workspace))

    async def refresh_workspace(self, workspace: str | os.PathLike[str]) -> ScanReport:
        """:meth:`index_workspace` in a worker thread, on a connection of its own: a folder of many sessions must not
        freeze its caller while their files are read. Raises as :meth:`index_workspace` does."""
        if self._database is None:
            return ScanReport()
        database = self._database

        def scan() -> ScanReport:
            with opened(database) as conn:
                return scan_workspace(conn, Path(workspace))

        return await asyncio.to_thread(scan)

    def sessions(
        self, workspace: str | os.PathLike[str] | None = None, *, limit: int | None = None
    ) -> list[SessionSummary]:
        """The indexed sessions of ``workspace`` (default: every workspace), newest first, at most ``limit``, as the
        session list shows them; none without an index. Index a folder first (:meth:`index_workspace`) to list what
        is on disk."""
        ledger = self.ledger
        if ledger is None:
            return []
        return list_sessions(ledger, Path(workspace) if workspace is not None else None, limit=limit)

    async def refresh_index(self, session: OpenedSession | str | os.PathLike[str]) -> SessionSummary | None:
        """:meth:`index` in a worker thread, as after every run: a session must not freeze its caller while its file
        is re-read, and a failure is logged, never raised (``tiny-agent index rebuild`` catches up); ``None`` then."""
        if self._database is None:
            return None
        try:
            return await asyncio.to_thread(self.index, session)
        except (TinyAgentError, sqlite3.Error, OSError) as error:
            _log.warning("re-indexing %s failed: %s", session, error)
            return None

    def summary(self, session: OpenedSession | str) -> SessionSummary | None:
        """The index row of ``session`` (an open session or its id) as last indexed; ``None`` when it is not indexed
        or there is no index."""
        ledger = self.ledger
        if ledger is None:
            return None
        return get_session(ledger, session.store.session_id if isinstance(session, OpenedSession) else session)

    def cost(self, session: OpenedSession | str) -> CostSum:
        """What ``session`` (an open session or its id) cost as last indexed — the session list's figure: the known
        costs summed, the unknown ones counted, and where the known ones came from. Nothing known without an index
        or before the session is indexed (:meth:`index`)."""
        summary = self.summary(session)
        if summary is None or self._ledger is None:
            return CostSum()
        rows = session_requests(self._ledger, summary.id)
        sources = frozenset(row.cost.source for row in rows if row.cost is not None and row.cost.source is not None)
        return CostSum(summary.cost, summary.cost_unknown_requests, sources)


def _ignore(_event: object) -> None:
    """An event sink that hears nothing."""


class _NobodyToAsk:
    """The approver of an agent built without one: denies every call it is asked about, saying what to do."""

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Deny the call."""
        return ApprovalAnswer.deny(
            f"{request.tool_name} needs approval and nobody can be asked here (the agent was built without an "
            "approver); pass approver= (or a standing permission in tool_settings) to let it run."
        )


_NOBODY = _NobodyToAsk()
