"""Append cost of the session store: O(1) validated appends beside a naive re-read-and-re-reduce writer.

    .venv/bin/python benchmarks/session_append.py [--appends 10000] [--naive 2000] [--no-fsync]

Plays the same realistic transactions (runs of user + runStarted, stepAttempt, assistant + usage, toolStarted,
tool result, ..., operationFinished; tool results of 700 characters) into

* ``SessionStore.append``: validates the line against the in-memory state, writes it, fsyncs;
* a naive writer, as the reference's store works: for every append it re-reads the whole file, re-reduces it
  with the new line (with this project's linear reducer; the reference's reducer is itself quadratic), then
  writes and fsyncs.

The naive writer runs ``--naive`` appends (it is quadratic); the ratio compares both at that same count. Prints
one JSON object: per-append median/p90 and total seconds for each, and the ratio of totals.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.deadline import exit_after
from tests.core.session.builders import generate_session
from tiny_agent_core.session import SessionStore, reduce_session

_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def transactions(count: int) -> list[list[dict[str, Any]]]:
    """``count`` consecutive valid transactions (fact lists without seq/timestamp) from a generated session."""
    data = generate_session(count * 3, seed=1)
    out: list[list[dict[str, Any]]] = []
    for raw in data.split(b"\n")[1 : count + 1]:
        value = json.loads(raw)
        batch = value if isinstance(value, list) else [value]
        out.append([{key: item for key, item in fact.items() if key not in ("seq", "timestamp")} for fact in batch])
    assert len(out) == count
    return out


class NaiveWriter:
    """Re-reads and re-reduces the whole file before every append (the reference's approach)."""

    def __init__(self, path: Path, fsync: bool) -> None:
        self.path = path
        self.fsync = fsync
        self.next_seq = 1

    def append(self, batch: list[dict[str, Any]]) -> None:
        data = self.path.read_bytes()
        timestamp = int(time.time() * 1000)
        facts = [{**fact, "seq": self.next_seq + index, "timestamp": timestamp} for index, fact in enumerate(batch)]
        line = (_DUMPS(facts[0] if len(facts) == 1 else facts) + "\n").encode()
        reduce_session(data + line)  # raises on an invalid candidate
        with open(self.path, "ab") as handle:
            handle.write(line)
            handle.flush()
            if self.fsync:
                os.fsync(handle.fileno())
        self.next_seq += len(facts)


def timed(append: Any, batches: list[list[dict[str, Any]]]) -> list[float]:
    times = []
    for batch in batches:
        start = time.perf_counter()
        append(batch)
        times.append(time.perf_counter() - start)
    return times


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "appends": len(times),
        "median_ms": round(statistics.median(ordered) * 1000, 4),
        "p90_ms": round(ordered[int(len(ordered) * 0.9)] * 1000, 4),
        "total_s": round(sum(ordered), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=10_000)
    parser.add_argument("--naive", type=int, default=2_000)
    parser.add_argument("--no-fsync", action="store_true", help="skip fsync in both writers")
    args = parser.parse_args()
    exit_after(900, "session_append")
    batches = transactions(max(args.appends, args.naive))
    fsync = not args.no_fsync
    real_fsync = os.fsync
    if not fsync:
        os.fsync = lambda fd: None  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as folder:
        with SessionStore.create(folder, model="test/model", environment="bench") as store:
            fast = timed(store.append, batches[: args.appends])
            facts = store.state.fact_count
            size = store.path.stat().st_size
        naive_path = Path(folder) / "naive.jsonl"
        naive_path.write_bytes(store.path.read_bytes().split(b"\n", 1)[0] + b"\n")
        naive = timed(NaiveWriter(naive_path, fsync).append, batches[: args.naive])
    os.fsync = real_fsync
    at = min(args.appends, args.naive)
    result = {
        "fsync": fsync,
        "store": {**summary(fast), "facts": facts, "file_mb": round(size / 1e6, 2)},
        "naive": summary(naive),
        "at_equal_count": {
            "appends": at,
            "store_total_s": round(sum(fast[:at]), 3),
            "naive_total_s": round(sum(naive[:at]), 3),
            "naive_over_store": round(sum(naive[:at]) / sum(fast[:at]), 1),
            "last_100_median_ratio": round(
                statistics.median(naive[at - 100 : at]) / statistics.median(fast[at - 100 : at]), 1
            ),
        },
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
