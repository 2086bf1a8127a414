"""``tiny-agent compare``: run one prompt on 2–4 models at once, each in its own copy of the workspace.

``tiny-agent compare --workspace DIR --model P/M --model P/M [...] [--allow TOOL]... [--allow-risky]
[--max-steps N] "prompt"``

- ``P/M`` names a provider profile of the desktop app's settings by its id (``P``, as Settings shows it; e.g.
  ``openrouter``, ``custom``) and a model of it (``M``, everything after the first ``/``, so
  ``openrouter/anthropic/claude-sonnet-4.5`` is model ``anthropic/claude-sonnet-4.5`` of profile ``openrouter``).
  The key is the profile's, as the window finds it: the OS keyring's, else the profile's environment variable's.
  The same ``P/M`` twice is refused.
- Each model runs in its own copy of ``DIR`` (a git worktree when ``DIR`` is in a git repository with a commit,
  otherwise a copy) under ``<data folder>/compare/<comparison id>/``, as a normal session in that copy; the
  original ``DIR`` is not touched. The copies stay after the command, so the comparison can be reopened in the
  window's compare view, a run kept ("Keep This One…" applies its changes to ``DIR``) or the copies discarded.
  The comparison's record is ``<data folder>/compare/<id>/comparison.json`` (:mod:`tiny_agent_core.comparisons`).
- Tool calls as in ``tiny-agent run``: only the built-ins named by ``--allow`` run (in the copy), every other call
  is denied, and a call the risk classifier flags is denied even for an allowed tool unless ``--allow-risky``.
  ``--max-steps`` bounds each run's model steps.
- stderr gets ``comparison <id> (<folder>)`` first, then one line per run as it ends. stdout gets, once every run
  has ended, one JSON line per model in the order given: ``{"model": "P/M", "sessionId", "outcome"
  ("completed" | "failed" | "aborted"), "steps" (model steps), "requests" (model requests, retries included),
  "wallMs", "usage": {input, output, cacheRead, cacheWrite} or null, "usageUnknownRequests", "cost": "<decimal>"
  or null, "costUnknownRequests", "costSources": [...], "filesChanged": [{"path", "status" ("added" | "modified"
  | "deleted"), "added", "removed"}], "tools": {outcome: count}, "copy": "<folder>" or null, "comparisonId",
  "error"?: "<message>"}``. Unknown is null, never 0.
- Ctrl-C stops every run (each abort is made durable first); their lines still follow, with outcome
  ``aborted``.
- Exit 0 when every run completed; 2 when any run failed or was aborted, or the comparison could not be set up
  (one stderr line ``{"error": {"kind", "message"}}``: ``index``, ``comparison``). Invalid arguments (fewer than 2
  or more than 4 models, a ``P/M`` without a ``/``, a profile the settings lack or that cannot be used, a key
  that cannot be read, a workspace that is not a folder, an ``--allow`` that is not a built-in) exit 2 with one
  line ``tiny-agent compare: error: <message>``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sqlite3
import sys
from typing import Any

from tiny_agent_core.cli.arguments import existing_folder, positive_int
from tiny_agent_core.cli.index import report_recovery
from tiny_agent_core.cli.output import fail, one_line
from tiny_agent_core.compare import MAX_CONTENDERS, MIN_CONTENDERS, CompareRun, Contender, RunReport
from tiny_agent_core.comparisons import ComparisonError
from tiny_agent_core.errors import LedgerError, SecretStoreError, SettingsError
from tiny_agent_core.ledger import connect
from tiny_agent_core.ledger.repricing import settings_overrides
from tiny_agent_core.paths import comparisons_folder
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings
from tiny_agent_core.tools.registry import BUILTIN_NAMES


def model_spec(text: str) -> tuple[str, str]:
    """``P/M``: a profile id and a model (split at the first ``/``, both non-empty)."""
    profile, _, model = text.strip().partition("/")
    if not profile or not model.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not PROFILE/MODEL (e.g. openrouter/openai/gpt-4o)")
    return profile, model.strip()


def register(subparsers: Any) -> None:
    """Add the ``compare`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "compare",
        help="run one prompt on 2-4 models at once, each in its own copy of the workspace (non-interactive)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", help="the task every model gets")
    parser.add_argument("--workspace", required=True, type=existing_folder, help="the folder to copy for each run")
    parser.add_argument(
        "--model",
        action="append",
        required=True,
        type=model_spec,
        metavar="P/M",
        help=f"a provider profile id and a model; {MIN_CONTENDERS} to {MAX_CONTENDERS} of them",
    )
    parser.add_argument(
        "--allow", action="append", default=[], choices=BUILTIN_NAMES, metavar="TOOL", help="a tool that may run"
    )
    parser.add_argument("--allow-risky", action="store_true", help="let allowed tools make risky calls too")
    parser.add_argument("--max-steps", type=positive_int, default=None, help="model steps each run may make")
    parser.set_defaults(handler=compare_command, parser=parser)


def _contenders(args: argparse.Namespace) -> list[Contender]:
    """The models of ``--model``, resolved against the settings (usage errors otherwise)."""
    parser: argparse.ArgumentParser = args.parser
    specs: list[tuple[str, str]] = args.model
    if not MIN_CONTENDERS <= len(specs) <= MAX_CONTENDERS:
        parser.error(f"give {MIN_CONTENDERS} to {MAX_CONTENDERS} --model P/M, not {len(specs)}")
    if len(set(specs)) != len(specs):
        parser.error("the same --model is given twice")
    settings = AppSettings.load()
    if settings.load_error is not None:
        parser.error(f"the settings cannot be used: {settings.load_error}")
    keys = KeyStore()
    out: list[Contender] = []
    for profile_id, model in specs:
        config = settings.profile(profile_id)
        if config is None:
            known = ", ".join(profile.id for profile in settings.profiles) or "none; add one in the window's Settings"
            parser.error(f"{profile_id}/{model}: no provider profile {profile_id!r} (profiles: {known})")
        try:
            out.append(Contender(config.provider_profile(), model, keys.key_for(config)))
        except (SettingsError, SecretStoreError) as error:
            parser.error(f"{profile_id}/{model}: {error}")
    return out


def run_json(report: RunReport) -> dict[str, Any]:
    """What one run did, as JSON (see the module docstring; ``tiny-agent comparisons list --json`` prints it too):
    unknown is null, never 0."""
    out: dict[str, Any] = {
        "sessionId": report.session_id,
        "outcome": report.status,
        "steps": report.steps,
        "requests": report.requests,
        "wallMs": round(report.wall_ms) if report.wall_ms is not None else None,
        "usage": report.usage.as_dict() if report.usage is not None else None,
        "usageUnknownRequests": report.unknown_usage,
        "cost": format(report.cost, "f") if report.cost is not None else None,
        "costUnknownRequests": report.unknown_cost,
        "costSources": sorted(report.cost_sources),
        "filesChanged": [
            {"path": change.path, "status": change.status, "added": change.added, "removed": change.removed}
            for change in report.changes
        ],
        "tools": dict(sorted(report.tools.items())),
        "copy": str(report.copy.path) if report.copy is not None else None,
    }
    if report.error is not None:
        out["error"] = one_line(report.error)
    return out


def _line(spec: tuple[str, str], report: RunReport, comparison_id: str) -> dict[str, Any]:
    """One model's stdout line (see the module docstring)."""
    return {"model": "/".join(spec), **run_json(report), "comparisonId": comparison_id}


async def _compare(args: argparse.Namespace, contenders: list[Contender], ledger: sqlite3.Connection) -> int:
    async with ProviderClient() as client:

        def ended(index: int) -> None:
            report = run.reports[index]
            if report.ended:
                detail = f": {one_line(report.error)}" if report.error else ""
                print(f"run {index + 1} {report.contender.label}: {report.status}{detail}", file=sys.stderr, flush=True)

        run = CompareRun(
            args.workspace.resolve(),
            args.prompt,
            contenders,
            folder=comparisons_folder(),
            client=client,
            allowed=args.allow,
            allow_risky=args.allow_risky,
            ledger=ledger,
            price_overrides=settings_overrides(),
            max_steps=args.max_steps,
            on_change=ended,
        )
        print(f"comparison {run.id} ({run.folder})", file=sys.stderr, flush=True)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, run.cancel)
        try:
            reports = await run.run()
        except ComparisonError as error:
            return fail("comparison", error)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
    for spec, report in zip(args.model, reports, strict=True):
        print(json.dumps(_line(spec, report, run.id), ensure_ascii=False), flush=True)
    return 0 if all(report.status == "completed" for report in reports) else 2


def compare_command(args: argparse.Namespace) -> int:
    """Handler of ``tiny-agent compare``."""
    if not args.prompt.strip():
        args.parser.error("the prompt is empty")
    contenders = _contenders(args)
    try:
        conn = connect()
    except LedgerError as error:
        return fail("index", error)
    with contextlib.closing(conn):
        report_recovery(conn)
        return asyncio.run(_compare(args, contenders, conn))
