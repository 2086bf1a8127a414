"""Generated index rows for the session-list and cost-view tests and ``benchmarks/session_list.py`` (no tests here).

Sessions are written through the ledger's own writer (:func:`~tiny_agent_core.ledger.index.write_session`, the
function a scan uses) and priced with :func:`~tiny_agent_core.ledger.record_live`, without session files, so a
thousand rows take a fraction of a second.
"""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from pathlib import Path

from tiny_agent_core.ledger import Cost, LiveRequest, RequestFacts, SessionFacts, record_live, transaction
from tiny_agent_core.ledger.index import add_workspace, write_session
from tiny_agent_core.usage import Usage

T0 = 1_760_000_000_000
"""Creation time of session number 0 (ms); session n is created n seconds later."""

MODELS = ("vendor/model-a", "vendor/model-b", "local/llama")
"""Model ids the bundled price table does not know, so a cost is known only where the test gives one."""
WORDS = ("fix", "the", "build", "explain", "tests", "refactor", "parser", "docs", "cache", "flaky", "ledger")


def session_id(number: int) -> str:
    """The id of generated session ``number``."""
    return f"{number:08x}-0000-7000-8000-000000000000"


def title_of(number: int) -> str:
    """The title of generated session ``number``."""
    return " ".join(WORDS[(number * k) % len(WORDS)] for k in (1, 3, 7)) + f" #{number}"


def cost_of(number: int) -> Decimal | None:
    """The request cost of generated session ``number``: unknown for every seventh (and all ``local/`` ones)."""
    if number % 7 == 0 or MODELS[number % len(MODELS)].startswith("local/"):
        return None
    return Decimal(number % 97 + 1) / Decimal(10_000)


def add_sessions(conn: sqlite3.Connection, workspace: Path, count: int, *, first: int = 0) -> list[str]:
    """Index ``count`` sessions numbered from ``first`` in ``workspace``, each with one request; returns their ids.

    Number n: model ``MODELS[n % 3]``, usage (1000 + n, 50, 200, 0), content "generated body <n>", status: every
    11th has an open run (interrupted), every 13th failed, every 17th was aborted.
    """
    priced: list[tuple[str, Decimal]] = []
    with transaction(conn):
        workspace_id = add_workspace(conn, workspace)
        for number in range(first, first + count):
            identifier = session_id(number)
            created = T0 + number * 1000
            model = MODELS[number % len(MODELS)]
            usage = Usage(1000 + number, 50, 200, 0)
            attempt = f"{number:08x}-0000-7000-8000-000000000001"
            request = RequestFacts(
                attempt_id=attempt,
                operation_id=f"{number:08x}-0000-7000-8000-000000000002",
                step_id=f"{number:08x}-0000-7000-8000-000000000003",
                attempt=1,
                step_kind="assistant",
                model=model,
                started_at=created + 1,
                usage=usage,
                stop_reason="stop",
                outcome="settled",
                finished_at=created + 2,
            )
            outcome = "failed" if number % 13 == 0 else "aborted" if number % 17 == 0 else "completed"
            facts = SessionFacts(
                id=identifier,
                created_at=created,
                cwd=str(workspace),
                provider="openrouter",
                model=model,
                title=title_of(number),
                updated_at=created + 2,
                operation="run" if number % 11 == 0 else "idle",
                last_outcome=outcome,
                facts=5,
                usage=usage,
                requests=[request],
                text=f"{title_of(number)}\ngenerated body {number}",
            )
            path = workspace / ".tiny-agent" / "sessions" / f"{identifier}.jsonl"
            write_session(conn, workspace_id, path, 0, 0, facts)
            cost = cost_of(number)
            if cost is not None:
                priced.append((attempt, cost))
    for attempt, cost in priced:
        record_live(conn, LiveRequest(attempt, cost=Cost(cost, "provider")))
    return [session_id(number) for number in range(first, first + count)]
