"""Start-up time of an MCP stdio server: spawn, handshake and ``tools/list``, as the agent connects to one.

    .venv/bin/python benchmarks/mcp_startup.py [--repeat 5]

The server is the tests' SDK server (``tests/core/mcp/server_app.py``, seven tools, written with the ``mcp`` SDK's
``MCPServer``), started by :meth:`tiny_agent_core.mcp.connection.Connection.open` exactly as a run does. Each
repetition times ``open`` (process spawn to the tool list in hand) and ``close`` (the SDK's stop: stdin closed,
the server exits). Next to it, the floor a Python server cannot beat: spawning the same interpreter to import
the SDK's server module and exit, timed in the same loop, interleaved. Prints one JSON object: the medians and
each run, in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.deadline import exit_after
from tiny_agent_core.mcp.catalog import StdioServer
from tiny_agent_core.mcp.connection import Connection

ROOT = Path(__file__).resolve().parent.parent
SERVER = StdioServer("bench", sys.executable, ("-m", "tests.core.mcp.server_app", "stdio"), cwd=str(ROOT))


async def _once() -> tuple[float, float, int]:
    started = time.perf_counter()
    connection = await Connection.open(SERVER)
    opened = time.perf_counter()
    tools = len(connection.tools)
    await connection.close()
    return opened - started, time.perf_counter() - opened, tools


def _import_floor() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server.mcpserver"], check=True, cwd=ROOT)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    exit_after(300, "mcp_startup")
    runs: list[tuple[float, float, int]] = []
    floors: list[float] = []
    for _ in range(args.repeat):  # interleaved, so both see the same machine
        runs.append(asyncio.run(_once()))
        floors.append(_import_floor())
    opens = [round(run[0], 3) for run in runs]
    closes = [round(run[1], 3) for run in runs]
    print(
        json.dumps(
            {
                "benchmark": "mcp_startup",
                "tools": runs[0][2],
                "start_median_s": round(statistics.median(opens), 3),
                "start_runs_s": opens,
                "close_median_s": round(statistics.median(closes), 3),
                "close_runs_s": closes,
                "import_floor_median_s": round(statistics.median(floors), 3),
            }
        )
    )


if __name__ == "__main__":
    main()
