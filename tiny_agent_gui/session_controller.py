"""Runs the agent for the window: one open session, one operation at a time, never blocking the event loop.

The controller owns the asyncio tasks (qasync) that run prompts, compactions and recoveries, keeps references to
them (an ``asyncSlot`` that raises would otherwise drop its task silently), and reports through signals. Failures
of a run are results (``RunFinished`` with an error) shown inline; anything unexpected is reported through
:attr:`SessionController.failed` with a message, never swallowed.

With ``mcp`` (the window's :class:`~tiny_agent_core.mcp.app_servers.AppServers`) every operation first connects
the enabled MCP servers (once per window; again after a settings change) and offers their tools next to the
built-ins; a server that cannot be connected is reported through :attr:`SessionController.mcp_failed` and the
operation goes on without its tools. Esc while connecting stops the operation before it starts.

A prompt may be a command (:mod:`tiny_agent_core.agent.commands`): ``/compact`` compacts the session as
:meth:`SessionController.compact` does; ``/skill:<name> <text>`` sends the skill's file with the text (read in a
worker thread once the operation starts; an unknown name is reported through :attr:`SessionController.failed`).

Before a prompt is sent, the session is compacted first when the last model request came close to the model's
known context window (the core's rule: :func:`tiny_agent_core.agent.auto_compact.decide`, at the percentage
``auto_compact`` gives; ``None``: never). That compaction is an operation of its own, reported through
:attr:`SessionController.finished` with a result whose ``answer`` says why it ran; then the prompt's run starts. When
it fails or is stopped (Esc), the prompt is not sent: it comes back through :attr:`SessionController.refused`, so
Esc means stop, and a failure is seen before anything is sent on an overfull context.

Nothing typed is lost: a prompt that is refused before it becomes durable (no provider, another operation running,
an unfinished operation in the session, text a session file cannot hold, Esc while the MCP servers connect, an
unknown skill, a failed append) comes back through :attr:`SessionController.refused` as typed, after the signal
that says why.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from PySide6.QtCore import QObject, Signal

from tiny_agent_core.agent import auto_compact
from tiny_agent_core.agent.commands import Compact, UseSkill, parse_command, skill_prompt
from tiny_agent_core.agent.events import DialectLearned
from tiny_agent_core.agent.loop import DEFAULT_MAX_STEPS, Agent, RunResult, check_prompt
from tiny_agent_core.errors import RecoveryBlockedError, TinyAgentError
from tiny_agent_core.mcp.app_servers import AppServers
from tiny_agent_core.mcp.errors import McpError
from tiny_agent_core.pricing import Overrides
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.timeline import Timeline
from tiny_agent_core.tools.approval import Approver, ToolSettings
from tiny_agent_core.tools.base import Tool
from tiny_agent_core.tools.registry import ToolSet
from tiny_agent_core.workbench import OpenedSession, Workbench, session_tools
from tiny_agent_gui.bridge import AgentBridge
from tiny_agent_gui.free_memory import release_free_memory
from tiny_agent_gui.session_loading import (
    KeptSession,
    KeptSessions,
    LoadedSession,
    close_loaded,
    load_session,
    request_rows,
    warm_session,
)

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Connection:
    """The provider, model and key a new run should use."""

    profile: ProviderProfile
    model: str
    api_key: str | None
    profile_id: str | None = None
    """The settings profile it comes from (to open that provider's settings from an error)."""


def _loop_running() -> bool:
    """Whether an asyncio loop runs on this thread (a window built outside one, as some tests do, reads nothing
    ahead)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _Warming(NamedTuple):
    """A session being read ahead (:meth:`SessionController.warm`)."""

    path: Path
    task: asyncio.Task[KeptSession | None]


def _settled(key: tuple[object, ...]) -> tuple[object, ...]:
    """An agent key without the context length the window found out by itself (not a settings change)."""
    profile = key[0]
    if isinstance(profile, ProviderProfile):
        return (replace(profile, context_length=None), *key[1:])
    return key


class SessionController(QObject):
    """The window's handle on the current session and its agent."""

    session_opened = Signal(object)
    """The new :class:`~tiny_agent_core.workbench.OpenedSession`."""
    busy_changed = Signal(bool)
    finished = Signal(object)
    """The :class:`~tiny_agent_core.agent.loop.RunResult` of a prompt, compaction or recovery."""
    recovery_blocked = Signal(str)
    """A crashed operation cannot be recovered safely; the message names the reason and the two ways out."""
    unfinished = Signal(str)
    """An operation stopped on an unexpected error and is still open in the session: offer Recover or Abort."""
    failed = Signal(str)
    """Something the user must know about that is not a run result (no provider configured, a corrupt file…)."""
    indexed = Signal(str)
    """A running session's index row was brought up to date once its prompt was saved (so the session list shows
    a new session, with its title, while it runs): the session id."""
    dialect_learned = Signal(object, object)
    """``(settings profile id or None, DialectLearned)``: the running agent's server needs a repaired request form;
    the agent keeps it, the window stores it in that profile."""
    mcp_failed = Signal(object)
    """An :class:`~tiny_agent_core.mcp.errors.McpError`: an MCP server (or the catalog) could not be used; the
    operation goes on without its tools."""
    refused = Signal(str)
    """What the user typed, given back: it was not sent (:attr:`failed` or :attr:`unfinished` said why just
    before), so the window puts it back in the composer."""

    def __init__(
        self,
        *,
        client: ProviderClient,
        approver: Approver,
        tool_settings: ToolSettings,
        connection: Callable[[], Connection | None],
        ledger: sqlite3.Connection | None = None,
        price_overrides: Callable[[], Overrides | None] = lambda: None,
        max_steps: Callable[[], int | None] = lambda: None,
        auto_compact: Callable[[], int | None] = lambda: None,
        network: Callable[[Path], bool] = lambda _workspace: True,
        mcp: AppServers | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.bridge = AgentBridge(self)
        self._client = client
        self._approver = approver
        self._tool_settings = tool_settings
        self._connection = connection
        self._workbench = Workbench.over(ledger)
        """Sessions, agents and the index: the window's index connection, or none."""
        self._price_overrides = price_overrides
        self._max_steps = max_steps
        self._auto_compact = auto_compact
        """The percentage of the context window from which a prompt is preceded by a compaction (``None``: never)."""
        self._network = network
        self._session: OpenedSession | None = None
        self._tools: ToolSet | None = None
        self._agent: Agent | None = None
        self._agent_key: tuple[object, ...] | None = None
        self._in_use: Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self._unsent: str | None = None
        """The typed text the running operation was started from, until it is used (its prompt is durable)."""
        self._opening: asyncio.Task[None] | None = None
        self._timeline: Timeline | None = None
        self._kept = KeptSessions()
        """The sessions closed last, ready to reopen without reading them again (see :mod:`.session_loading`)."""
        self._warming: _Warming | None = None
        self._abort: asyncio.Future[bool] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self.bridge.dialect_learned.connect(self._dialect_learned)
        self._background: set[asyncio.Task[Any]] = set()
        """Work beside the operations: indexing a running session, the ledger's rows of a reopened one."""
        self.bridge.run_started.connect(self._run_started)
        self.mcp = mcp
        """The window's MCP servers (``None``: no MCP)."""
        self._connecting_mcp: asyncio.Future[list[McpError]] | None = None
        self._preparing: asyncio.Future[str] | None = None
        """A ``/skill:`` prompt's file being read (Esc cancels it: nothing is durable yet)."""
        if mcp is not None:  # the raw exchange of an MCP call is kept under the call id the agent announces
            self.bridge.tool_started.connect(lambda event: mcp.exchanges.started(event.call_id, event.name))

    @property
    def workbench(self) -> Workbench:
        """The core's front door this controller goes through (over the window's index connection, or none)."""
        return self._workbench

    @property
    def session(self) -> OpenedSession | None:
        """The open session, if any."""
        return self._session

    @property
    def connection_in_use(self) -> Connection | None:
        """The connection the current (or last) operation was started with."""
        return self._in_use

    def settings_changed_since_start(self) -> bool:
        """True when the settings changed the provider, model, key or step limit since the current (or last)
        operation started: a running one finishes on the old ones; the next request uses the new ones."""
        if self._agent_key is None:
            return False
        connection = self._connection()
        return connection is None or _settled(self._key(connection)) != _settled(self._agent_key)

    def adopt_settings(self) -> None:
        """The settings changed only by what the running agent already uses (a dialect it learned): keep the agent
        and count the new settings as the ones it was started with."""
        connection = self._connection()
        if self._agent is not None and connection is not None:
            self._agent_key = self._key(connection)
            self._in_use = connection

    def _dialect_learned(self, event: DialectLearned) -> None:
        used = self._in_use
        self.dialect_learned.emit(used.profile_id if used is not None else None, event)

    def _key(self, connection: Connection) -> tuple[object, ...]:
        """Everything the agent is built from: a changed base URL or step limit reaches the next request."""
        max_steps = self._max_steps() or DEFAULT_MAX_STEPS
        mcp = self.mcp.generation if self.mcp is not None else None
        return (connection.profile, connection.model, connection.api_key, max_steps, mcp)

    @property
    def busy(self) -> bool:
        """True while an operation runs."""
        return self._task is not None and not self._task.done()

    @property
    def opening(self) -> bool:
        """True while a session is being read to open it (:meth:`open`; :attr:`busy` too, but nothing to stop)."""
        return self._opening is not None and not self._opening.done()

    @property
    def timeline(self) -> Timeline | None:
        """The open session's timeline (the transcript's items), built with the session; ``None`` without one."""
        return self._timeline if self._session is not None else None

    def open(self, path: Path) -> asyncio.Task[None] | None:
        """Open a session file (read-only if another writer holds it); recover it when a crash left it open.

        Reading and strictly validating the file and building its timeline take a while for a long session, so they
        run in a worker thread while the window goes on painting (see :func:`.session_loading.load_session`; a session
        closed a moment ago and unchanged since is reused, not read again). Until they are done the open
        counts as an operation (:attr:`busy`; :meth:`wait_idle` waits for it and for the recovery it may start);
        :attr:`session_opened` fires once the session and its :attr:`timeline` are ready. Opening another session
        meanwhile supersedes this one. Returns the task, or ``None`` when nothing was started: the session is
        already open (re-opening would collide with our own lock), or an operation is running.
        """
        current = self._session
        if current is not None and current.store.path.resolve() == path.resolve():
            return None
        opening = self._opening
        if opening is not None and not opening.done():
            opening.cancel()  # the user picked another session while this one loads
        elif self.busy:
            self.failed.emit("Stop the running operation before opening another session.")
            return None
        self.close()
        task = asyncio.ensure_future(self._open(path))
        self._task = self._opening = task
        self.busy_changed.emit(True)
        return task

    async def _open(self, path: Path) -> None:
        kept = await self._kept_or_warmed(path)
        loading = asyncio.get_running_loop().run_in_executor(None, load_session, path, self._workbench.database, kept)
        try:
            loaded: LoadedSession = await asyncio.shield(loading)
        except asyncio.CancelledError:  # superseded: the worker still finishes; release what it opened
            loading.add_done_callback(close_loaded)
            raise
        except (TinyAgentError, OSError) as error:
            self._opening = None
            self.failed.emit(f"Cannot open {path.name}: {error}")
            self.busy_changed.emit(False)
            return
        self._opening = None  # loaded: from here on (a recovery) only Esc stops this operation
        opened, timeline = loaded.session, loaded.timeline
        self._switch(opened, timeline)
        self._track(asyncio.to_thread(release_free_memory))  # what the previous session and the load left freed
        if loaded.reused and self._workbench.database is not None:
            self._track(self._enrich(opened, timeline))
        agent = None
        if not opened.read_only and opened.store.state.operation.kind != "idle":
            agent = self._agent_for(opened)
        if agent is None:
            self.busy_changed.emit(False)
            return
        await self._run(agent, self._recover)  # as recover() would: this task is the operation

    def warm(self, path: Path) -> None:
        """The user points at session ``path`` (in the session list): read and validate it now, read-only in a worker
        thread, so that opening it reuses the result (:func:`.session_loading.warm_session`). Nothing happens while
        an operation runs, while another session is being read ahead, or for the open or an already kept session.
        """
        current = self._session
        if self.busy or self._warming is not None or path in self._kept or not _loop_running():
            return
        if current is not None and current.store.path == path:
            return
        task = asyncio.ensure_future(self._warm(path))
        self._warming = _Warming(path, task)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _warm(self, path: Path) -> KeptSession | None:
        try:
            kept = await asyncio.get_running_loop().run_in_executor(None, warm_session, path, self._workbench.database)
        except (TinyAgentError, OSError) as error:  # opening it will say so
            _log.info("could not read %s ahead: %s", path.name, error)
            kept = None
        warming = self._warming
        if warming is not None and warming.task is asyncio.current_task():  # not claimed by an open meanwhile
            self._warming = None
            if kept is not None:
                self._kept.keep(kept.snapshot, kept.timeline)
        return kept

    async def _kept_or_warmed(self, path: Path) -> KeptSession | None:
        """What this window already read of ``path``: a kept session, or the one being read ahead (awaited)."""
        warming = self._warming
        if warming is None or warming.path != path:
            return self._kept.take(path)
        self._warming = None  # this open takes its result; it is not kept
        try:
            return await asyncio.shield(warming.task)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug while reading ahead: opening reads the file itself, and reports
            _log.exception("reading %s ahead failed", path.name)
            return None

    def new(self, workspace: Path) -> None:
        """Start a new session in ``workspace`` with the current provider and model."""
        if self.busy:
            self.failed.emit("Stop the running operation before starting a new session.")
            return
        connection = self._connection()
        if connection is None:
            self.failed.emit("Set up a provider first (Settings → Providers).")
            return
        try:
            opened = self._workbench.create_session(workspace, connection.profile, connection.model)
        except (TinyAgentError, OSError) as error:
            self.failed.emit(f"Cannot create a session in {workspace}: {error}")
            return
        timeline = Timeline(opened.store.state.header)  # a new file holds only its header
        opened.store.observe_commits(timeline.apply)
        self._switch(opened, timeline)

    def submit(self, prompt: str) -> None:
        """Run ``prompt`` (or the command it is) in the open session; when it cannot be sent, say why and give it
        back (:attr:`refused`)."""
        if not prompt.strip():
            return
        try:  # before anything starts (an automatic compaction would run first)
            check_prompt(prompt)
        except ValueError as error:
            self._refuse(f"{error} It is back in the composer.", prompt)
            return
        session = self._session
        if session is not None and not session.read_only and session.store.state.operation.kind != "idle":
            self.unfinished.emit(
                "This session has an unfinished operation: recover it (or abort it, Session menu) before a new "
                "prompt; your prompt is back in the composer."
            )
            self.refused.emit(prompt)
            return
        command = parse_command(prompt)
        if isinstance(command, Compact):
            self._start(self._compact, typed=prompt)
            return

        async def work(agent: Agent) -> RunResult | None:
            message = prompt
            if isinstance(command, UseSkill):
                reading = self._preparing = asyncio.ensure_future(
                    asyncio.to_thread(skill_prompt, agent.workspace, command)
                )
                try:
                    message = await reading
                except asyncio.CancelledError:
                    if asyncio.current_task().cancelling():  # type: ignore[union-attr]  # the operation itself
                        raise
                    return None  # Esc while the skill was read: nothing sent; _run gives the typed text back
                finally:
                    self._preparing = None
            compacted = await self._compact_first(agent)
            if compacted is not None and compacted.outcome != "completed":
                return compacted  # not sent: _run gives the typed text back
            return await agent.run(message)

        self._start(work, typed=prompt)

    def recover(self) -> None:
        """Finish the operation a crash or an unexpected error left open, as the recovery planner says."""
        self._start(self._recover)

    def compact(self) -> None:
        """Compact the open session (Session › Compact, or ``/compact`` typed in the composer)."""
        self._start(self._compact)

    async def _compact(self, agent: Agent) -> RunResult:
        self._unsent = None  # a typed /compact is used once the compaction begins
        return await agent.compact()

    async def _compact_first(self, agent: Agent) -> RunResult | None:
        """Compact before a prompt when the core's rule says so (see the module docstring); the compaction's result,
        its ``answer`` saying why it ran (reported through :attr:`finished` when it completed), else ``None``."""
        timeline, used = self._timeline, self._in_use
        if timeline is None or used is None:
            return None
        decision = auto_compact.decide(
            timeline.steps(), used.profile.context_length, self._auto_compact(), agent.store.state.active_context
        )
        if decision is None:
            return None
        result = await agent.compact()
        if result.outcome == "completed":
            answer = f"Before sending: {decision.reason()}. {result.answer or ''}".rstrip()
            self.finished.emit(replace(result, answer=answer))
            return None
        what = "was stopped" if result.outcome == "aborted" else "failed"
        return replace(
            result,
            answer=f"Not sent: the compaction before it {what} ({decision.reason()}); your prompt is back in the "
            "composer. Send it again, or turn automatic compaction off in Settings › Tools.",
        )

    def abandon(self) -> None:
        """Abort an operation whose recovery is blocked (the explicit way out)."""

        async def work(agent: Agent) -> RunResult:
            return await agent.abandon()

        self._start(work)

    def cancel(self) -> None:
        """Stop the running operation (Esc): ``abortRequested`` is durable first, then the work is cancelled."""
        agent = self._agent
        if self._connecting_mcp is not None and not self._connecting_mcp.done():  # nothing started: nothing to record
            self._connecting_mcp.cancel()
        elif self._preparing is not None and not self._preparing.done():  # nothing durable yet: the prompt comes back
            self._preparing.cancel()
        elif agent is not None and self.busy:
            self._abort = asyncio.ensure_future(agent.abort())
            self._abort.add_done_callback(self._abort_done)

    def _abort_done(self, future: asyncio.Future[bool]) -> None:
        error = None if future.cancelled() else future.exception()
        if error is not None:  # abortRequested could not be made durable: stop the work anyway, and say so
            if self._task is not None:
                self._task.cancel()
            self.failed.emit(f"Stopping could not be recorded in the session ({error}); the work was cancelled.")

    async def wait_idle(self) -> None:
        """Wait until the running operation ends (for tests and shutdown)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def close(self) -> None:
        """Close the open session: release its writer lock; stop the background processes its tools started."""
        tools = self._tools
        if tools is not None:
            task = asyncio.ensure_future(tools.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        if self._session is not None:
            snapshot = self._session.store.close_keeping()
            if snapshot is not None and self._timeline is not None:
                self._kept.keep(snapshot, self._timeline)
        self._session, self._tools, self._agent, self._agent_key = None, None, None, None

    async def aclose(self) -> None:
        """Close the session and wait until its background processes and the MCP servers are stopped (at
        application exit)."""
        self.close()
        if self.mcp is not None:
            stopping = asyncio.ensure_future(self.mcp.aclose())
            self._closing.add(stopping)
            stopping.add_done_callback(self._closing.discard)
        if self._closing or self._background:
            await asyncio.gather(*self._closing, *self._background, return_exceptions=True)

    @property
    def mcp_running(self) -> bool:
        """Whether MCP servers are connected (they are stopped by :meth:`aclose`)."""
        return self.mcp is not None and bool(self.mcp.connected)

    def mcp_changed(self) -> None:
        """The MCP settings may have changed: connect the servers again before the next operation."""
        if self.mcp is not None:
            self.mcp.changed()

    # -- internals --------------------------------------------------------------------------------------------

    def _switch(self, opened: OpenedSession, timeline: Timeline) -> None:
        self.close()
        self._session = opened
        self._timeline = timeline
        if not opened.read_only:
            network = self._network(opened.workspace)
            self._tools = ToolSet(session_tools(opened, self._tool_settings, network=network))
        self.session_opened.emit(opened)

    def _agent_for(self, session: OpenedSession) -> Agent | None:
        connection = self._connection()
        if connection is None:
            self.failed.emit("Set up a provider first (Settings → Providers).")
            return None
        max_steps = self._max_steps() or DEFAULT_MAX_STEPS
        key = self._key(connection)
        self._in_use = connection
        if self._agent is None or self._agent_key != key:
            self._agent = self._workbench.agent(
                session,
                client=self._client,
                profile=connection.profile,
                model=connection.model,
                api_key=connection.api_key,
                approver=self._approver,
                tool_settings=self._tool_settings,
                tools=self._session_tools(),
                on_event=self.bridge.sink,
                price_overrides=self._price_overrides(),
                max_steps=max_steps,
            )
            self._agent_key = key
        return self._agent

    def _session_tools(self) -> list[Tool] | None:
        """The built-ins of the session (kept across agents) and the connected MCP servers' tools."""
        if self._tools is None:
            return None
        return [*self._tools.values(), *(self.mcp.tools() if self.mcp is not None else ())]

    async def _with_mcp(self, agent: Agent) -> Agent | None:
        """Connect the MCP servers when they are not (the failures go to :attr:`mcp_failed`); the agent to run,
        rebuilt when the offered tools changed; ``None`` when Esc stopped the connecting or no provider is set up."""
        if self.mcp is None:
            return agent
        before = self.mcp.generation
        key = self._in_use.api_key if self._in_use is not None else None
        connecting = self._connecting_mcp = asyncio.ensure_future(self.mcp.ensure(secrets=[key]))
        try:
            failures = await connecting
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not connecting.cancelled() or (current is not None and current.cancelling()):
                raise
            return None  # Esc while connecting: the operation never started
        finally:
            self._connecting_mcp = None
        for failure in failures:
            self.mcp_failed.emit(failure)
        session = self._session
        if self.mcp.generation == before or session is None or session.store is not agent.store:
            return agent
        return self._agent_for(session)

    async def _recover(self, agent: Agent) -> RunResult | None:
        return await agent.resume()

    def _start(self, work: Callable[[Agent], Coroutine[Any, Any, RunResult | None]], typed: str | None = None) -> None:
        """Start ``work`` as the operation; ``typed``: the text it comes from, given back if it is never used."""
        session = self._session
        if session is None:
            self._refuse("Open or start a session first.", typed)
            return
        if session.read_only:
            self._refuse(session.read_only_reason or "This session is read-only.", typed)
            return
        if self.busy:
            self._refuse("An operation is already running; press Esc to stop it.", typed)
            return
        agent = self._agent_for(session)
        if agent is None:  # no provider: _agent_for said so
            self._refuse(None, typed)
            return
        self._unsent = typed
        self._task = asyncio.ensure_future(self._run(agent, work))
        self.busy_changed.emit(True)

    def _refuse(self, reason: str | None, typed: str | None) -> None:
        """Say why nothing was started (unless already said), and give back what was typed."""
        if reason is not None:
            self.failed.emit(reason)
        if typed is not None:
            self.refused.emit(typed)

    async def _run(self, agent: Agent, work: Callable[[Agent], Coroutine[Any, Any, RunResult | None]]) -> None:
        report: Callable[[], None] | None = None  # what to tell the window once the index is current
        try:
            ready = await self._with_mcp(agent)
            if ready is None:
                return
            agent = ready
            result = await work(agent)
            if result is not None:
                report = partial(self.finished.emit, result)
        except RecoveryBlockedError as error:
            report = partial(self.recovery_blocked.emit, str(error))
        except Exception as error:  # everything is shown; nothing is lost
            if not isinstance(error, TinyAgentError):
                _log.exception("operation failed")
            if agent.store.state.operation.kind != "idle" and not agent.store.closed:
                report = partial(self.unfinished.emit, f"The operation stopped before it finished: {error}")
            else:
                text = str(error) if isinstance(error, TinyAgentError) else f"Unexpected error: {error!r}"
                report = partial(self.failed.emit, text)
        finally:
            try:
                await self._reindex(agent)
            finally:
                if report is not None:
                    report()
                unsent, self._unsent = self._unsent, None
                if unsent is not None:  # stopped before its prompt was durable (Esc while connecting, a failed append)
                    self.refused.emit(unsent)
                self.busy_changed.emit(False)

    def _run_started(self, _event: object) -> None:
        """The prompt is durable (nothing to give back any more): index the session now (off the GUI thread), then
        say so with :attr:`indexed`."""
        self._unsent = None
        agent = self._agent
        if agent is None or self._workbench.database is None:
            return

        async def index() -> None:
            await self._reindex(agent)
            self.indexed.emit(agent.store.session_id)

        self._track(index())

    def _track(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the operations (indexing, ledger reads); :meth:`aclose` waits for it."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _enrich(self, opened: OpenedSession, timeline: Timeline) -> None:
        """A reused timeline was shown: apply the ledger's rows again (read in a worker thread; a cost may have been
        repriced since it was closed), if it is still the session shown."""
        rows = await asyncio.get_running_loop().run_in_executor(
            None, request_rows, self._workbench.database, opened.store
        )
        if self._session is opened:
            for row in rows:
                timeline.enrich_request(row)

    async def _reindex(self, agent: Agent) -> None:
        """Bring the index row (title, tokens, state, search text) up to date with the session file: the
        workbench re-reads it in a worker thread on a connection of its own, so a long session does not freeze the
        window after every prompt, and a failure is logged, not shown."""
        if not agent.store.closed:
            await self._workbench.refresh_index(agent.store.path)
