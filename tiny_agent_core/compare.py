"""One task, several models, started together: a compare run (no Qt here).

:class:`CompareRun` gives each model (2–4 :class:`Contender`) its own copy of the workspace
(:func:`~tiny_agent_core.worktrees.make_copy`: a git worktree or a bounded plain copy), a normal v2 session in that
copy and its own agent (:func:`~tiny_agent_core.workbench.build_agent`), and runs the prompt in all of them as
concurrent asyncio tasks. Tool calls are decided without asking, as ``tiny-agent run --allow`` does
(:func:`~tiny_agent_core.tools.approval.non_interactive`): the tools in ``allowed`` run (in the copy), every other
call is denied, and so is a risky call (``rm -rf``, a write through a planted symlink…) unless ``allow_risky``.
:meth:`CompareRun.cancel` stops them all (each abort is durable first, as Esc in a session).

Each run's :class:`RunReport` is updated as it goes (``on_change(index)`` after every change) and completed from
its session file at the end: outcome, wall time, model steps and requests, tool calls by outcome
(:mod:`~tiny_agent_core.tool_outcomes`), tokens by kind, cost with its sources, and the changes the run made to its
copy against the starting tree (:func:`~tiny_agent_core.worktrees.workspace_changes`).

The run is saved as it starts and when it ends (:mod:`~tiny_agent_core.comparisons`: ``comparison.json`` in its
folder, beside the copies), so it is listed and reopens later; "keep this one" and "discard copies" are
:func:`~tiny_agent_core.comparisons.keep_run` and :func:`~tiny_agent_core.comparisons.discard_copies` on
:attr:`CompareRun.comparison`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from tiny_agent_core.agent.events import AgentEvent, ToolFinished
from tiny_agent_core.agent.loop import DEFAULT_MAX_STEPS, Agent, RunResult
from tiny_agent_core.agent.requests import RequestRecord
from tiny_agent_core.compare_reports import Contender, RunReport, RunStatus
from tiny_agent_core.comparisons import Comparison, ComparisonError, record_bytes, write_record
from tiny_agent_core.errors import TinyAgentError
from tiny_agent_core.pricing import Overrides
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.session.facts import new_id
from tiny_agent_core.session.store import read_session_file
from tiny_agent_core.timeline import Timeline, ToolItem
from tiny_agent_core.tool_outcomes import call_outcome
from tiny_agent_core.tools.approval import ToolSettings, non_interactive
from tiny_agent_core.workbench import OpenedSession, build_agent, create_session
from tiny_agent_core.worktrees import CopyLimits, FileChange, make_copy, workspace_changes

__all__ = ["MAX_CONTENDERS", "MIN_CONTENDERS", "CompareRun", "Contender", "RunReport", "RunStatus"]

_log = logging.getLogger(__name__)

MIN_CONTENDERS = 2
MAX_CONTENDERS = 4


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
        allow_risky: bool = False,
        ledger: sqlite3.Connection | None = None,
        price_overrides: Overrides | None = None,
        max_steps: int | None = DEFAULT_MAX_STEPS,
        limits: CopyLimits | None = None,
        on_change: Callable[[int], None] = lambda _index: None,
    ) -> None:
        """``folder``: where comparisons go (this one in ``folder/<id>/``: its record and one copy per run, a git
        worktree or a plain copy)."""
        if not MIN_CONTENDERS <= len(contenders) <= MAX_CONTENDERS:
            raise ValueError(f"a compare run takes {MIN_CONTENDERS} to {MAX_CONTENDERS} models")
        if not prompt.strip():
            raise ValueError("a compare run needs a prompt")
        self.id = new_id()
        self.workspace = workspace
        self.prompt = prompt
        self.folder = folder / self.id
        self.reports = [RunReport(contender) for contender in contenders]
        self.comparison = Comparison(self.id, self.folder, workspace, prompt, tuple(allowed), self.reports)
        """The saved record of this run (its reports are :attr:`reports`)."""
        self._client = client
        self._allowed = tuple(allowed)
        self._allow_risky = allow_risky
        self._ledger = ledger
        self._price_overrides = price_overrides
        self._max_steps = max_steps
        self._limits = limits
        self._on_change = on_change
        self._agents: dict[int, Agent] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._aborts: list[asyncio.Future[bool]] = []
        self._cancelled = False
        self._saving = asyncio.Lock()

    @property
    def running(self) -> bool:
        """True while any run has not ended."""
        return any(not task.done() for task in self._tasks)

    async def run(self) -> list[RunReport]:
        """Save the comparison, start every run, wait for all of them, save the outcome, and return the reports (in
        the contenders' order). Raises :class:`~tiny_agent_core.comparisons.ComparisonError` when the comparison
        cannot be saved at the start (nothing is run then); a failure to save the end is logged."""
        await self._save()
        self._tasks = [asyncio.ensure_future(self._one(index)) for index in range(len(self.reports))]
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.comparison.ended_at = time.time_ns() // 1_000_000
        try:
            await self._save()
        except ComparisonError as error:
            _log.error("%s", error)
        return self.reports

    async def _save(self) -> None:
        """Save the record: taken on the loop that changes the reports, written in a worker thread, one save at a
        time (so an older state never replaces a newer one)."""
        async with self._saving:
            await asyncio.to_thread(write_record, self.folder, record_bytes(self.comparison))

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
            await self._save()  # the copy is in the record before the run uses it: it can be discarded after a crash
            if self._cancelled:
                raise asyncio.CancelledError
            opened = create_session(report.copy.path, contender.profile, contender.model)
            report.session_path = opened.store.path
            report.session_id = opened.store.session_id
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
        policy, approver = non_interactive(self._allowed, allow_risky=self._allow_risky)
        agent = build_agent(
            opened,
            client=self._client,
            profile=contender.profile,
            model=contender.model,
            api_key=contender.api_key,
            approver=approver,
            policy=policy,
            tool_settings=ToolSettings.in_memory(),
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
                for item in Timeline.from_bytes(read_session_file(path)).items:
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
