"""What one run of a compare run is and how far it has got (no Qt, no I/O): :class:`Contender`, :class:`RunReport`.

A report is filled in as the run goes (:class:`~tiny_agent_core.compare.CompareRun`) and saved with its comparison
(:mod:`~tiny_agent_core.comparisons`), so a comparison reopens from the same figures after its copies are gone.
Unknown stays unknown: a request without usage makes the tokens partial (``unknown_usage``), one without a price
the cost (``unknown_cost``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Literal

from tiny_agent_core.agent.requests import RequestRecord
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.usage import Usage
from tiny_agent_core.worktrees import FileChange, WorkspaceCopy

__all__ = ["Contender", "RunReport", "RunStatus"]

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
    """The run's copy of the workspace; ``None`` before it is made and after it was removed."""
    session_path: Path | None = None
    session_id: str | None = None
    wall_ms: float | None = None
    """From the start of the run (after the copy) to its end; while running, so far."""
    requests: int = 0
    """Model requests made (every attempt)."""
    step_ids: set[str] = field(default_factory=set)
    """The model steps those requests belonged to (a retried step is one step)."""
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
    def steps(self) -> int:
        """How many model steps the run made."""
        return len(self.step_ids)

    @property
    def tool_calls(self) -> int:
        """How many tool calls ended."""
        return sum(self.tools.values())

    @property
    def ended(self) -> bool:
        """True once the run completed, failed or was aborted."""
        return self.status not in ("preparing", "running")

    def add_request(self, record: RequestRecord) -> None:
        """Count one physical request: its step, usage and cost (unknown ones counted apart)."""
        self.requests += 1
        self.step_ids.add(record.step_id)
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
