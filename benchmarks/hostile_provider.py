"""Peak memory of the client against hostile providers (issue 8): each response must be refused, not buffered.

    .venv/bin/python benchmarks/hostile_provider.py [--timeout 120]

Runs each case of ``tests/core/providers/hostile.py`` in a fresh process (so each peak is its own) against the
loopback server, which makes the body lazily as the client reads it: a 200 MB JSON body, a 300 MB SSE line without
a newline, and a streamed tool call with 50 MB of arguments. Prints one JSON line: per case the typed error, the
baseline and peak RSS (``VmHWM``) in MB and the seconds the request took. A case that does not finish within
``--timeout`` seconds is killed and reported as failed; the exit status is 1 if any case failed or was accepted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.deadline import exit_after  # noqa: E402
from tests.core.providers.hostile import CASES  # noqa: E402


def _run(case: str, timeout: float) -> dict[str, Any]:
    command = [sys.executable, "-m", "tests.core.providers.hostile", case]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"case": case, "failed": f"did not finish within {timeout:g} s"}
    if done.returncode != 0:
        return {"case": case, "failed": f"exit {done.returncode}: {done.stderr.strip()[-500:]}"}
    result: dict[str, Any] = json.loads(done.stdout)
    if result["error"] is not None:
        result["error"] = result["error"]["type"]
    return result


def main() -> None:
    exit_after(900, "hostile_provider")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds allowed per case")
    args = parser.parse_args()
    results = [_run(case, args.timeout) for case in CASES]
    print(json.dumps({"benchmark": "hostile_provider", "cases": results}))
    if any("failed" in result or result["error"] is None for result in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
