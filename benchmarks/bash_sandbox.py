"""Wall time of one ``bash`` call (``true``), sandboxed in bubblewrap vs unsandboxed.

    .venv/bin/python benchmarks/bash_sandbox.py [--calls 30] [--limit 120]

Each mode runs ``--calls`` calls through ``BashTool.execute`` in a fresh workspace, after one warm-up call (the
sandbox probe is cached by then). Prints one JSON line with the median, p90 and max in milliseconds per mode and
the sandbox's status; where bwrap cannot run, the sandboxed figures are ``null`` and ``reason`` says why. The whole
run is bounded by ``--limit`` seconds: past it, it fails with a message instead of hanging.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.deadline import exit_after
from tiny_agent_core.tools.bash import BashTool
from tiny_agent_core.tools.sandbox import sandbox_status


async def _timings(tool: BashTool, calls: int) -> list[float]:
    """Milliseconds per call, after one warm-up call."""
    await tool.execute({"command": "true", "timeout": 30})
    timings = []
    for _ in range(calls):
        started = time.perf_counter()
        outcome = await tool.execute({"command": "true", "timeout": 30})
        timings.append((time.perf_counter() - started) * 1000)
        if outcome.content != "(no output)":
            raise RuntimeError(f"unexpected bash result: {outcome.content!r}")
    return timings


def _summary(timings: list[float] | None) -> dict[str, float] | None:
    if timings is None:
        return None
    ordered = sorted(timings)
    return {
        "median_ms": round(statistics.median(ordered), 2),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 2),
        "max_ms": round(ordered[-1], 2),
    }


async def _measure(workspace: Path, calls: int) -> dict[str, object]:
    status = sandbox_status()
    plain = await _timings(BashTool(workspace, sandbox=False), calls)
    boxed = await _timings(BashTool(workspace), calls) if status.available else None
    return {
        "benchmark": "bash_sandbox",
        "calls": calls,
        "sandbox_available": status.available,
        "reason": status.reason,
        "unsandboxed": _summary(plain),
        "sandboxed": _summary(boxed),
    }


def main() -> int:
    """Run the benchmark; exit code 1 with a message on stderr if it fails or passes ``--limit``."""
    exit_after(300, "bash_sandbox")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30, help="calls per mode (default 30)")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds before giving up (default 120)")
    args = parser.parse_args()
    try:
        with tempfile.TemporaryDirectory() as folder:
            workspace = Path(folder).resolve()
            result = asyncio.run(asyncio.wait_for(_measure(workspace, args.calls), args.limit))
    except TimeoutError:
        print(f"bash_sandbox: gave up after {args.limit:g} seconds", file=sys.stderr)
        return 1
    except (OSError, RuntimeError) as error:
        print(f"bash_sandbox: failed: {error}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
