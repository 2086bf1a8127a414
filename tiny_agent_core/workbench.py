"""What the window needs from the core, in one place and without Qt: open or create sessions, build agents.

The GUI holds no business rules; it asks the workbench. Opening a session another window or a CLI is writing gives
a read-only view with the reason, never an error: the user can still read it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tiny_agent_core.agent.events import EventSink
from tiny_agent_core.agent.loop import DEFAULT_MAX_STEPS, Agent, RequestRecord, RequestRecorder
from tiny_agent_core.agent.recording import LedgerRecorder
from tiny_agent_core.errors import SessionLockedError
from tiny_agent_core.pricing import Overrides
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.providers.transport import Timeouts
from tiny_agent_core.session.store import CommitObserver, SessionStore
from tiny_agent_core.tools.approval import ApprovalPolicy, Approver, ToolSettings
from tiny_agent_core.tools.base import Tool
from tiny_agent_core.tools.registry import builtin_tools


@dataclass
class OpenedSession:
    """A session open in the window."""

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


def open_session(path: Path, *, observer: CommitObserver | None = None) -> OpenedSession:
    """Open ``path`` for writing, or read-only with the reason when another window or process is writing it.

    ``observer`` hears every committed transaction as the file is read, then every later commit (see
    :meth:`SessionStore.open`: one walk over the file). Raises :class:`~tiny_agent_core.errors.SessionCorruption`
    for a corrupt file.
    """
    try:
        return OpenedSession(SessionStore.open(path, observer=observer))
    except SessionLockedError as error:  # refused before the file was read: the observer has heard nothing
        reason = f"{error} It is shown read-only; close it there to continue here."
        return OpenedSession(SessionStore.open(path, read_only=True, observer=observer), reason)


def create_session(workspace: Path, profile: ProviderProfile, model: str) -> OpenedSession:
    """A new session in ``workspace`` for ``profile`` and ``model``."""
    return OpenedSession(SessionStore.create(workspace, model=model, provider=profile.id))


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
