"""Load-and-validate time of a generated 100,000-fact session (the strict reducer is linear in the file size).

    .venv/bin/python benchmarks/session_load.py [--facts 100000] [--repeat 3]

Generates a valid session (runs of three tool steps with ~700-character results, some non-ASCII, a final
answer, a compaction every 500 runs; ~60 MB), writes it to a temporary file, then times reading the file and
reducing it (``reduce_session``: framing, strict JSON, every reducer rule) ``--repeat`` times, each with the previous
load's state freed first. Each load is paired with the floor no reader can beat in Python: reading the same file
and a bare stdlib ``json.loads`` of every line (no checks), timed in the same run, interleaved, in CPU seconds;
``load_over_json_loads`` is the ratio of the two medians (target ≤ 2.5). That floor drops each parsed line at once,
so its memory is reused while hot; a loader must keep what it parsed, so ``load_over_json_loads_kept`` also gives
the ratio to a floor that keeps every parsed line in a list. Prints one JSON object with the median and each run in
seconds, throughput, the floor and the ratio, and what one append would cost a naive writer that re-reads and
re-reduces the file (one load) next to the store's O(1) append at that size.

With ``--walkers`` it also times, in CPU seconds, what reads a file through the reducer's one walk: the ledger's
``extract_session`` and ``Timeline.from_bytes`` (each validates the file and consumes its typed facts).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.deadline import exit_after
from tests.core.session.builders import generate_session
from tiny_agent_core.session import RunOperation, SessionState, SessionStore, facts, reduce_session


def _json_loads_floor(path: Path, keep: bool) -> float:
    """CPU seconds to read ``path`` and ``json.loads`` every line, checking nothing (the stdlib floor); with
    ``keep``, every parsed line is kept until the end, as a loader keeps its state.

    The cyclic garbage collector is paused, as ``reduce_session`` pauses it, so the floor is not inflated by it.
    """
    gc.disable()
    try:
        start = time.process_time()
        data = path.read_bytes()
        loads = json.loads
        kept = []
        for line in data[: data.rfind(b"\n")].split(b"\n"):
            value = loads(line)
            if keep:
                kept.append(value)
        elapsed = time.process_time() - start
        del kept
        return elapsed
    finally:
        gc.enable()


def _walkers(data: bytes, repeat: int) -> dict[str, float]:
    """Median CPU seconds of ``extract_session`` and ``Timeline.from_bytes`` on ``data``."""
    from tiny_agent_core.ledger.extract import extract_session
    from tiny_agent_core.timeline import Timeline

    result = {}
    for name, read in (("extract_session_cpu_s", extract_session), ("timeline_from_bytes_cpu_s", Timeline.from_bytes)):
        times = []
        for _ in range(repeat):
            gc.collect()
            start = time.process_time()
            read(data)
            times.append(time.process_time() - start)
        result[name] = round(statistics.median(times), 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--walkers", action="store_true", help="also time extract_session and Timeline.from_bytes")
    args = parser.parse_args()
    exit_after(1200, "session_load")
    started = time.perf_counter()
    data = generate_session(args.facts)
    generated = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore.create(folder, model="test/model", environment="bench")
        path = store.path
        store.close()
        header = reduce_session(data).header
        # Same content under a proper session file name, with this header's id.
        path.write_bytes(data.replace(header.id.encode(), store.session_id.encode(), 1))
        runs = []
        cpu = []
        floor = []
        kept_floor = []
        state: SessionState | None = None
        for _ in range(args.repeat):
            # Free the previous load's state first: each load starts with nothing held, as the floor does (a held
            # 200 MB state made every later load ~0.1 s slower on this machine than the first).
            state = None
            start, start_cpu = time.perf_counter(), time.process_time()
            state = reduce_session(path.read_bytes())
            runs.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            floor.append(_json_loads_floor(path, keep=False))
            kept_floor.append(_json_loads_floor(path, keep=True))
        with SessionStore.open(path) as writer:  # an append at this size, for comparison
            appends = []
            for _ in range(20):
                entry = facts.new_id()
                batch = [
                    facts.user_entry("hi", entry_id=entry),
                    facts.run_started(operation_id=facts.new_id(), input_entry_id=entry),
                ]
                start = time.perf_counter()
                writer.append(batch)
                appends.append(time.perf_counter() - start)
                run = writer.state.operation
                assert isinstance(run, RunOperation)
                writer.append(facts.abort_requested(operation_id=run.operation_id, operation_kind="run", phase="model"))
                writer.append(facts.operation_aborted(operation_id=run.operation_id))
    assert state is not None
    median = statistics.median(runs)
    append = statistics.median(appends)
    floor_cpu = statistics.median(floor)
    walkers = _walkers(data, args.repeat) if args.walkers else {}
    print(
        json.dumps(
            {
                **walkers,
                "facts": state.fact_count,
                "lines": state.line_count,
                "file_mb": round(len(data) / 1e6, 1),
                "generate_s": round(generated, 2),
                "load_validate_median_s": round(median, 3),
                "load_validate_runs_s": [round(value, 3) for value in runs],
                "load_validate_cpu_s": [round(value, 3) for value in cpu],
                "json_loads_floor_cpu_s": [round(value, 3) for value in floor],
                "load_over_json_loads": round(statistics.median(cpu) / floor_cpu, 2),
                "json_loads_kept_floor_cpu_s": [round(value, 3) for value in kept_floor],
                "load_over_json_loads_kept": round(statistics.median(cpu) / statistics.median(kept_floor), 2),
                "mb_per_s": round(len(data) / 1e6 / median, 1),
                "store_append_median_ms_at_this_size": round(append * 1000, 3),
                "naive_append_at_this_size_s": round(median, 3),
                "naive_over_store_append": round(median / append),
            }
        )
    )


if __name__ == "__main__":
    main()
