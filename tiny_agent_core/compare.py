"""One task, several models, started together: a compare run (no Qt here).

:class:`CompareRun` gives each model (2–4 :class:`Contender`) its own copy of the workspace
(:func:`~tiny_agent_core.worktrees.make_copy`: a git worktree or a bounded plain copy), a normal v2 session in that
copy and its own agent (:func:`~tiny_agent_core.workbench.build_agent`), and runs the prompt in all of them as
concurrent asyncio tasks. Tool calls are decided without asking: the tools in ``allowed`` run (in the copy), every
other call is denied, as ``tiny-agent run --allow`` does. :meth:`CompareRun.cancel` stops them all (each abort is
durable first, as Esc in a session).

Each run's :class:`RunReport` is updated as it goes (``on_change(index)`` after every change) and completed from
its session file at the end: outcome, wall time, model requests, tool calls by outcome
(:mod:`~tiny_agent_core.tool_outcomes`), tokens by kind, cost with its sources, and the changes the run made to its
copy against the starting tree (:func:`~tiny_agent_core.worktrees.workspace_changes`). Unknown stays unknown: a
request without usage makes the tokens partial (``unknown_usage``), one without a price the cost
(``unknown_cost``).
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Literal

from tiny_agent_core.agent.events import AgentEvent, ToolFinished
from tiny_agent_core.agent.loop import DEFAULT_MAX_STEPS, Agent, RequestRecord, RunResult
from tiny_agent_core.errors import TinyAgentError
from tiny_agent_core.pricing import Overrides
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.session.facts import new_id
from tiny_agent_core.timeline import Timeline, ToolItem
from tiny_agent_core.tool_outcomes import call_outcome
from tiny_agent_core.tools.approval import AllowListApprover, ToolSettings
from tiny_agent_core.usage import Usage
from tiny_agent_core.workbench import OpenedSession, build_agent, create_session
from tiny_agent_core.worktrees import CopyLimits, FileChange, WorkspaceCopy, make_copy, workspace_changes

__all__ = ["MAX_CONTENDERS", "MIN_CONTENDERS", "CompareRun", "Contender", "RunReport", "RunStatus"]

MIN_CONTENDERS = 2
MAX_CONTENDERS = 4
RunStatus = Literal["preparing", "running", "completed", "failed", "aborted"]
"""Where one run of a compare is: copying the workspace, running, or how it ended."""


@dataclass(frozen=True)
class Contender:
    """One model of a compare run and how to reach it."""

    profile: ProviderProfile
    model: str
    api_key: str | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        """``provider · model``."""
        return f"{self.profile.name} · {self.model}"


@dataclass
class RunReport:
    """One run of a compare, as far as it has got."""

    contender: Contender
    status: RunStatus = "preparing"
    copy: WorkspaceCopy | None = None
    session_path: Path | None = None
    wall_ms: float | None = None
    """From the start of the run (after the copy) to its end; while running, so far."""
    requests: int = 0
    """Model requests made (every attempt)."""
    tools: Counter[str] = field(default_factory=Counter)
    """Tool calls by outcome (``ok``, ``exit``, ``denied``…)."""
    usage: Usage | None = None
    """Sum of the requests' known usage; ``None`` when none is known."""
    unknown_usage: int = 0
    cost: Decimal | None = None
    """Sum of the requests' known costs; ``None`` when none is known."""
    unknown_cost: int = 0
    cost_sources: set[str] = field(default_factory=set)
    answer: str | None = None
    error: str | None = None
    changes: list[FileChange] = field(default_factory=list)
    started: float | None = field(default=None, repr=False)

    @property
    def tool_calls(self) -> int:
        """How many tool calls ended."""
        return sum(self.tools.values())

    def add_request(self, record: RequestRecord) -> None:
        """Count one physical request: its usage and cost (unknown ones counted apart)."""
        self.requests += 1
        if record.usage is None:
            self.unknown_usage += 1
        else:
            self.usage = record.usage if self.usage is None else self.usage + record.usage
        if record.cost.amount is None:
            self.unknown_cost += 1
        else:
            self.cost = record.cost.amount + (self.cost or Decimal(0))
            if record.cost.source is not None:
                self.cost_sources.add(record.cost.source)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:40] or "model"


class CompareRun:
    """Runs one prompt on several models at once, each in its own copy of ``workspace`` under ``folder``."""

    def __init__(
        self,
        workspace: Path,
        prompt: str,
        contenders: Sequence[Contender],
        *,
        folder: Path,
        client: ProviderClient,
        allowed: Sequence[str] = ("read", "write", "edit"),
        tool_settings: ToolSettings | None = None,
        ledger: sqlite3.Connection | None = None,
        price_overrides: Overrides | None = None,
        max_steps: int | None = DEFAULT_MAX_STEPS,
        limits: CopyLimits | None = None,
        on_change: Callable[[int], None] = lambda _index: None,
    ) -> None:
        """``folder``: where the copies go (one sub-folder per run; a git worktree or a plain copy)."""
        if not MIN_CONTENDERS <= len(contenders) <= MAX_CONTENDERS:
            raise ValueError(f"a compare run takes {MIN_CONTENDERS} to {MAX_CONTENDERS} models")
        if not prompt.strip():
            raise ValueError("a compare run needs a prompt")
        self.id = new_id()
        self.workspace = workspace
        self.prompt = prompt
        self.folder = folder / self.id
        self.reports = [RunReport(contender) for contender in contenders]
        self._client = client
        self._allowed = tuple(allowed)
        self._tool_settings = tool_settings or ToolSettings.in_memory()
        self._ledger = ledger
        self._price_overrides = price_overrides
        self._max_steps = max_steps
        self._limits = limits
        self._on_change = on_change
        self._agents: dict[int, Agent] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._aborts: list[asyncio.Future[bool]] = []
        self._cancelled = False

    @property
    def running(self) -> bool:
        """True while any run has not ended."""
        return any(not task.done() for task in self._tasks)

    async def run(self) -> list[RunReport]:
        """Start every run, wait for all of them, and return the reports (in the contenders' order)."""
        self._tasks = [asyncio.ensure_future(self._one(index)) for index in range(len(self.reports))]
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return self.reports

    def cancel(self) -> None:
        """Stop every run: a running agent aborts durably (as Esc); a run still copying is cancelled."""
        self._cancelled = True
        for index, task in enumerate(self._tasks):
            agent = self._agents.get(index)
            if agent is not None and agent.busy:
                abort = asyncio.ensure_future(agent.abort())
                self._aborts.append(abort)
                abort.add_done_callback(partial(self._abort_done, task=task))
            elif not task.done() and self.reports[index].status == "preparing":
                task.cancel()

    @staticmethod
    def _abort_done(abort: asyncio.Future[bool], *, task: asyncio.Task[None]) -> None:
        """An abort that could not be made durable still stops the run."""
        if abort.cancelled() or abort.exception() is not None:
            task.cancel()

    async def _one(self, index: int) -> None:
        report = self.reports[index]
        contender = report.contender
        try:
            destination = self.folder / f"{index + 1}-{_slug(contender.model)}"
            report.copy = await asyncio.to_thread(make_copy, self.workspace, destination, limits=self._limits)
            if self._cancelled:
                raise asyncio.CancelledError
            opened = create_session(report.copy.path, contender.profile, contender.model)
            report.session_path = opened.store.path
            try:
                result = await self._drive(index, opened)
            finally:
                opened.store.close()
                self._agents.pop(index, None)
            report.status = result.outcome
            report.answer = result.answer
            report.error = str(result.error) if result.error is not None else None
        except asyncio.CancelledError:
            report.status = "aborted"
        except (TinyAgentError, OSError) as error:
            report.status = "failed"
            report.error = str(error)
        finally:
            if report.started is not None:
                report.wall_ms = (time.monotonic() - report.started) * 1000
            await self._conclude(report)
            self._on_change(index)

    async def _drive(self, index: int, opened: OpenedSession) -> RunResult:
        """Build run ``index``'s agent over its session and run the prompt."""
        report = self.reports[index]
        contender = report.contender
        agent = build_agent(
            opened,
            client=self._client,
            profile=contender.profile,
            model=contender.model,
            api_key=contender.api_key,
            approver=AllowListApprover(self._allowed),
            tool_settings=self._tool_settings,
            on_event=lambda event: self._event(index, event),
            ledger=self._ledger,
            price_overrides=self._price_overrides,
            max_steps=self._max_steps,
            also_record=lambda record: self._record(index, record),
        )
        self._agents[index] = agent
        report.status = "running"
        report.started = time.monotonic()
        self._on_change(index)
        return await agent.run(self.prompt)

    async def _conclude(self, report: RunReport) -> None:
        """Count tool calls by outcome from the session file and list the copy's changes (in a worker thread)."""
        copy, path = report.copy, report.session_path

        def read() -> tuple[Counter[str], list[FileChange]]:
            tools: Counter[str] = Counter()
            if path is not None:
                for item in Timeline.from_bytes(path.read_bytes()).items:
                    if isinstance(item, ToolItem):
                        tools[item.outcome.kind if item.outcome is not None else item.status] += 1
            return tools, workspace_changes(copy) if copy is not None else []

        try:
            report.tools, report.changes = await asyncio.to_thread(read)
        except (TinyAgentError, OSError) as error:
            report.error = report.error or f"The run's results could not be read: {error}"

    def _event(self, index: int, event: AgentEvent) -> None:
        if isinstance(event, ToolFinished):
            outcome = call_outcome(event.name, event.outcome, event.content)
            self.reports[index].tools[outcome.kind if outcome is not None else event.outcome] += 1
        self._tick(index)

    def _record(self, index: int, record: RequestRecord) -> None:
        self.reports[index].add_request(record)
        self._tick(index)

    def _tick(self, index: int) -> None:
        report = self.reports[index]
        if report.started is not None:
            report.wall_ms = (time.monotonic() - report.started) * 1000
        self._on_change(index)
