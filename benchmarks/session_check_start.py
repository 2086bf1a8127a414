"""Start-up cost of ``tiny-agent session check`` on a small file, next to a bare ``python -c "import json"``.

    .venv/bin/python benchmarks/session_check_start.py [--repeat 21] [FILE]

A small session check is almost all interpreter start and imports, so this times whole processes: the
``tiny-agent`` console script of this interpreter's environment checking ``FILE`` (default: a generated session
of a few facts in a temporary folder), interleaved with the floor no Python command can beat, the same
interpreter running ``-c "import json"``. Wall seconds per process, ``--repeat`` pairs; prints one JSON object
with both medians and ``check_over_import_json``, the ratio of the medians (target ≤ 3).

Two ways of starting are timed, each against its own floor:

* ``cached`` — as an installed copy starts: the children write and reuse bytecode in a private
  ``PYTHONPYCACHEPREFIX`` (a temporary folder; the checkout gets no ``__pycache__``), warmed by one run first;
* ``no_bytecode`` — as this environment starts when it sets ``PYTHONDONTWRITEBYTECODE``: every module of the
  project is compiled from source at every start, so the figure grows with the source the command imports.

Every child has a timeout; a check that fails (exit status ≠ 0) or times out ends the benchmark with a message and
exit status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.deadline import exit_after

CHILD_TIMEOUT_S = 30.0
"""Longest one child process may take."""


def _timed(command: list[str], environment: dict[str, str]) -> float:
    """Wall seconds of one child process; exits the benchmark with a message if it fails or hangs."""
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, timeout=CHILD_TIMEOUT_S, check=False, env=environment)
    except subprocess.TimeoutExpired:
        sys.exit(f"session_check_start: {' '.join(command)} took more than {CHILD_TIMEOUT_S:g} s")
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"session_check_start: {' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def _small_session(folder: Path) -> Path:
    """A valid session of one run (three tool steps and a final answer), as the test builders write it."""
    from tests.core.session.builders import generate_session

    path = folder / "small.jsonl"
    path.write_bytes(generate_session(8))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("file", nargs="?", type=Path, help="the session file to check (default: a generated one)")
    args = parser.parse_args()
    exit_after(300, "session_check_start")
    script = Path(sys.executable).parent / "tiny-agent"
    if not script.exists():
        sys.exit(f"session_check_start: {script} is missing; install the project into this environment first")
    result: dict[str, object] = {"repeat": args.repeat}
    with tempfile.TemporaryDirectory() as folder:
        path = args.file if args.file is not None else _small_session(Path(folder))
        result["file_bytes"] = path.stat().st_size
        check = [sys.executable, str(script), "session", "check", str(path)]
        floor = [sys.executable, "-c", "import json"]
        base = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        modes = {
            "cached": {**base, "PYTHONPYCACHEPREFIX": str(Path(folder) / "pycache")},
            "no_bytecode": {**base, "PYTHONDONTWRITEBYTECODE": "1"},
        }
        for mode, environment in modes.items():
            _timed(check, environment)  # warm the file cache (and, when cached, write the bytecode)
            _timed(floor, environment)
            checks: list[float] = []
            floors: list[float] = []
            for _ in range(args.repeat):
                floors.append(_timed(floor, environment))
                checks.append(_timed(check, environment))
            check_median, floor_median = statistics.median(checks), statistics.median(floors)
            result[mode] = {
                "check_median_ms": round(check_median * 1000, 1),
                "import_json_median_ms": round(floor_median * 1000, 1),
                "check_over_import_json": round(check_median / floor_median, 2),
            }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
