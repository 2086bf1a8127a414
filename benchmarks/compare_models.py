"""A 3-model compare of a small task against the loopback server, versus the same three runs one after another.

    .venv/bin/python benchmarks/compare_models.py [--repeats 5] [--pace 0.02] [--git]

Each model is scripted (:mod:`tests.scripted_models`): one streamed tool call (``edit`` of a file), then a final
answer streamed as 50 deltas ``--pace`` seconds apart (about 1 s at the default, a realistic per-token delay). The
workspace is a small folder (a plain copy per run; ``--git`` makes it a git repository, so each run gets a
worktree). A compare is :class:`~tiny_agent_core.compare.CompareRun` end to end (record, copies, sessions, the
changes); the sequential baseline makes the same copy, session and agent for each model in turn and runs it. The
loopback server runs in a thread of this process. Prints one JSON object: the median and every wall time of both,
and the ratio of the medians (sequential / compare). Gives up with a message after 180 s (benchmarks/deadline.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from benchmarks.deadline import exit_after
from tests.loopback import LoopbackServer, Reply
from tests.scripted_models import ScriptedModels, answer, tool_call
from tiny_agent_core.compare import CompareRun, Contender
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import ProviderProfile, custom_profile
from tiny_agent_core.tools.approval import ToolSettings, non_interactive
from tiny_agent_core.workbench import build_agent, create_session
from tiny_agent_core.worktrees import make_copy, remove_copy

MODELS = ("model-a", "model-b", "model-c")
ANSWER = "I changed the greeting in greet.py so that it says hello to the user by name, as asked. " * 2


def _script(model: str, pace: float) -> list[Reply]:
    edit = tool_call("e1", "edit", {"path": "greet.py", "edits": [{"oldText": "hi", "newText": f"hi from {model}"}]})
    return [edit, answer(ANSWER, pieces=50, pace=pace)]


def _workspace(root: Path, git: bool) -> Path:
    workspace = root / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "greet.py").write_text("print('hi')\n")
    (workspace / "README.md").write_text("# greet\n\nSays hi.\n")
    (workspace / "src" / "util.py").write_text("".join(f"def f{n}():\n    return {n}\n\n" for n in range(50)))
    if git:
        env = ["-c", "user.name=b", "-c", "user.email=b@b"]
        for args in (["init", "-q"], ["add", "."], [*env, "commit", "-q", "-m", "start"]):
            subprocess.run(["git", "-C", str(workspace), *args], check=True, capture_output=True)
    return workspace


async def _compare(workspace: Path, folder: Path, profile: ProviderProfile, client: ProviderClient) -> float:
    contenders = [Contender(profile, model) for model in MODELS]
    run = CompareRun(workspace, "greet by name", contenders, folder=folder, client=client, allowed=["edit"])
    started = time.perf_counter()
    reports = await run.run()
    wall = time.perf_counter() - started
    if [report.status for report in reports] != ["completed"] * len(MODELS):
        raise SystemExit(f"a compare run did not complete: {[(r.status, r.error) for r in reports]}")
    for report in reports:
        if report.copy is not None:
            remove_copy(report.copy)
    return wall


async def _one_after_another(workspace: Path, folder: Path, profile: ProviderProfile, client: ProviderClient) -> float:
    started = time.perf_counter()
    for index, model in enumerate(MODELS):
        copy = await asyncio.to_thread(make_copy, workspace, folder / f"{index + 1}-{model}")
        opened = create_session(copy.path, profile, model)
        policy, approver = non_interactive(["edit"])
        agent = build_agent(
            opened,
            client=client,
            profile=profile,
            model=model,
            api_key=None,
            approver=approver,
            policy=policy,
            tool_settings=ToolSettings.in_memory(),
            on_event=lambda _event: None,
        )
        result = await agent.run("greet by name")
        opened.store.close()
        if result.outcome != "completed":
            raise SystemExit(f"a sequential run did not complete: {result.outcome} {result.error}")
        remove_copy(copy)
    return time.perf_counter() - started


async def _measure(repeats: int, pace: float, git: bool) -> dict[str, object]:
    root = Path(tempfile.mkdtemp(prefix="compare-bench-"))
    try:
        workspace = _workspace(root, git)
        with LoopbackServer() as server:
            profile = custom_profile(server.base_url, name="Loop")
            async with ProviderClient(httpx.AsyncClient(trust_env=False)) as client:
                together: list[float] = []
                apart: list[float] = []
                for repeat in range(repeats):
                    server.handler = ScriptedModels({model: _script(model, pace) for model in MODELS})
                    together.append(await _compare(workspace, root / f"compare-{repeat}", profile, client))
                    server.handler = ScriptedModels({model: _script(model, pace) for model in MODELS})
                    apart.append(await _one_after_another(workspace, root / f"apart-{repeat}", profile, client))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    compare_median = statistics.median(together)
    sequential_median = statistics.median(apart)
    return {
        "models": len(MODELS),
        "repeats": repeats,
        "workspaceCopy": "worktree" if git else "copy",
        "answerSeconds": round(pace * 50, 2),
        "compareMedianS": round(compare_median, 3),
        "sequentialMedianS": round(sequential_median, 3),
        "ratio": round(sequential_median / compare_median, 2),
        "compareS": [round(value, 3) for value in together],
        "sequentialS": [round(value, 3) for value in apart],
    }


def main() -> None:
    """Parse the options, measure, print the JSON line."""
    exit_after(180, "compare_models")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pace", type=float, default=0.02, help="seconds between the answer's 50 deltas")
    parser.add_argument("--git", action="store_true", help="make the workspace a git repository (worktrees)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(_measure(args.repeats, args.pace, args.git))))


if __name__ == "__main__":
    main()
