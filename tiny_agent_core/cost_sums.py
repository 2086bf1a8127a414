"""Adding up request costs: a sum of the known ones, a count of the unknown ones, and where the known ones came from.

An unknown cost is never $0 (:class:`~tiny_agent_core.pricing.Cost`), so a sum says how many requests it could not
price instead of pretending they were free; a sum with no known cost has no total at all (``None``), not zero.

Two views of a session's requests use it: the requests an agent reports as it runs (:meth:`CostSum.of`, every
request counted — ``tiny-agent run``'s summary) and the model steps of a session's timeline
(:func:`step_costs` — the window's status bar), where a request that failed before any answer and reported no
usage is not counted as unknown: nothing was billed for it that we know of.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: adding up costs needs neither the pricing rules nor the timeline
    from tiny_agent_core.pricing import Cost
    from tiny_agent_core.timeline import StepInfo

__all__ = ["CostSum", "step_costs"]


@dataclass(frozen=True, slots=True)
class CostSum:
    """What some requests cost, as far as it is known."""

    total: Decimal | None = None
    """US dollars, the sum of the known costs; ``None`` when no cost is known."""
    unknown: int = 0
    """How many requests' costs are unknown (not in :attr:`total`)."""
    sources: frozenset[str] = frozenset()
    """Where the known costs came from (``provider``, ``price_table``, ``override``)."""

    @classmethod
    def of(cls, costs: Iterable[Cost]) -> CostSum:
        """The sum of ``costs``, each one request's."""
        return _sum((cost.amount, cost.source) for cost in costs)


def step_costs(steps: Iterable[StepInfo]) -> CostSum:
    """The cost of a timeline's model steps: every answered step (settled, or with usage or a cost) counts, known or
    unknown; a step that failed before any answer and reported no usage is left out."""
    return _sum(
        (step.cost, step.cost_source)
        for step in steps
        if step.status == "settled" or step.usage is not None or step.cost is not None
    )


def _sum(costs: Iterable[tuple[Decimal | None, str | None]]) -> CostSum:
    total: Decimal | None = None
    unknown = 0
    sources: set[str] = set()
    for amount, source in costs:
        if amount is None:
            unknown += 1
            continue
        total = amount if total is None else total + amount
        if source:
            sources.add(source)
    return CostSum(total, unknown, frozenset(sources))
