"""Index 10,000 generated sessions and time listing them newest first (SPEC §8).

    .venv/bin/python benchmarks/index_sessions.py [--sessions N] [--repeat R]

Writes N small valid v2 session files (user message, one model request with usage, answer) into a temporary
workspace, indexes them with ``scan_workspace`` (a cold full index), re-scans them unchanged (stat only), then
times ``list_sessions`` newest first: the first page (50 rows), a title search, and all N rows. Prints medians
in milliseconds as one JSON object. Everything lives in a temporary folder (``TINY_AGENT_DATA_DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.deadline import exit_after
from tests.core.ledger.sessionfiles import SessionFile
from tiny_agent_core.ledger import connect, list_sessions, scan_workspace

WORDS = ["fix", "the", "build", "explain", "tests", "refactor", "parser", "docs", "cache", "flaky", "ledger"]


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 3)


def main() -> None:
    """Run the benchmark and print the numbers."""
    exit_after(1800, "index_sessions")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tiny-agent-bench-") as tmp:
        root = Path(tmp)
        os.environ["TINY_AGENT_DATA_DIR"] = str(root / "data")
        workspace = root / "ws"
        start = time.perf_counter()
        base = 1_760_000_000_000
        for number in range(1, args.sessions + 1):
            session = SessionFile(workspace, number, created_at=base + number * 1000)
            title = " ".join(WORDS[(number * k) % len(WORDS)] for k in (1, 3, 7, 11))
            session.user(f"{title} #{number}")
            session.attempt()
            session.answer("done", usage=(1000 + number % 500, 50, 200, 0))
        generate_s = time.perf_counter() - start
        conn = connect()
        start = time.perf_counter()
        report = scan_workspace(conn, workspace)
        index_s = time.perf_counter() - start
        assert report.indexed == args.sessions, report
        assert not report.corrupt, report.corrupt[:3]
        start = time.perf_counter()
        rescan = scan_workspace(conn, workspace)
        rescan_s = time.perf_counter() - start
        assert rescan.unchanged == args.sessions
        first_page = _median_ms(lambda: list_sessions(conn, workspace, limit=50), args.repeat)
        search = _median_ms(lambda: list_sessions(conn, workspace, title_contains="flaky parser"), args.repeat)
        everything = _median_ms(lambda: list_sessions(conn, workspace), max(3, args.repeat // 4))
        newest = list_sessions(conn, workspace, limit=1)[0]
        assert newest.created_at == base + args.sessions * 1000
        conn.close()
    print(
        json.dumps(
            {
                "sessions": args.sessions,
                "generate_files_s": round(generate_s, 2),
                "index_cold_s": round(index_s, 2),
                "index_per_session_ms": round(index_s * 1000 / args.sessions, 3),
                "rescan_unchanged_s": round(rescan_s, 3),
                "list_first_page_50_median_ms": first_page,
                "list_title_search_median_ms": search,
                "list_all_median_ms": everything,
            }
        )
    )


if __name__ == "__main__":
    main()
