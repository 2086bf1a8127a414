"""``tiny-agent comparisons``: list the saved comparisons, keep one run's changes, or discard the copies.

``tiny-agent compare`` leaves every run's copy of the workspace in place so that a run can be kept; these commands
do from a terminal what the window's compare view does (:mod:`tiny_agent_core.comparisons`):

- ``tiny-agent comparisons list [--json]``: the saved comparisons, newest first (at most
  :data:`~tiny_agent_core.comparisons.MAX_LISTED`): id, start, state (``copies kept``, ``copies removed``, ``kept
  run N``), the prompt's first line, then one line per run with its outcome, cost and changed files. ``--json``
  prints one JSON array of ``{"id", "startedAt" (ms), "endedAt", "workspace", "prompt", "allowed", "kept" (run
  number or null), "copiesRemoved", "runs": [{"run", "label", ...}]}``, each run as ``tiny-agent compare`` prints
  it (unknown is null, never 0).
- ``tiny-agent comparisons keep ID RUN --yes``: apply run ``RUN``'s (1-based, as listed) changes to the workspace,
  then remove every run's copy (the sessions are kept, moved into the comparison's folder and indexed there). A
  file the run changed that changed in the workspace too since the run started is a conflict: nothing is written.
  Without ``--yes`` nothing is written either: the files it would change are listed on stderr (exit 2), as the
  window asks before it keeps a run. Prints ``{"ok": true, "comparisonId", "kept", "workspace", "files"}``.
- ``tiny-agent comparisons discard ID``: remove every run's copy, keeping the sessions. Prints ``{"ok": true,
  "comparisonId", "copiesRemoved": true}``.

``ID`` is a comparison id as listed (or a prefix that names one comparison; it is only ever looked up among the
listed ones, never used as a path; a comparison's id is the name of its folder, so no two share one). Exit 0 on
success; 2 with one stderr line ``{"error": {"kind": "comparison", "message"}}`` when the comparisons cannot be read
or changed; invalid arguments (an unknown or ambiguous id, a run number out of range, a run with no changes or no
copy left) exit 2 with one line ``tiny-agent comparisons ACTION: error: …``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tiny_agent_core.cli.arguments import positive_int
from tiny_agent_core.cli.compare import run_json
from tiny_agent_core.cli.output import fail, one_line
from tiny_agent_core.compare import RunReport
from tiny_agent_core.comparisons import Comparison, discard_copies, keep_run, list_comparisons
from tiny_agent_core.errors import TinyAgentError
from tiny_agent_core.ledger.costs import sum_cost_text
from tiny_agent_core.timestamps import local_datetime


def register(subparsers: Any) -> None:
    """Add the ``comparisons`` subcommand and its actions."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "comparisons",
        help="list saved comparisons, keep one run's changes, or discard the copies",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="{list,keep,discard}")
    listing = actions.add_parser("list", help="the saved comparisons, newest first")
    listing.add_argument("--json", action="store_true", help="print a JSON array instead of text")
    listing.set_defaults(handler=list_command, parser=listing)
    keep = actions.add_parser("keep", help="apply one run's changes to the workspace, then remove every copy")
    keep.add_argument("id", help="the comparison id (or a prefix that names one)")
    keep.add_argument("run", type=positive_int, help="the run's number, as listed (1 is the first model)")
    keep.add_argument("--yes", action="store_true", help="apply the changes (without it, only list them)")
    keep.set_defaults(handler=keep_command, parser=keep)
    discard = actions.add_parser("discard", help="remove every run's copy of the workspace (sessions are kept)")
    discard.add_argument("id", help="the comparison id (or a prefix that names one)")
    discard.set_defaults(handler=discard_command, parser=discard)


def _state(comparison: Comparison) -> str:
    if comparison.kept is not None:
        return f"kept run {comparison.kept + 1}"
    return "copies removed" if comparison.copies_removed else "copies kept"


def _run_text(number: int, report: RunReport) -> str:
    """One run's line of the listing."""
    known = report.cost is not None or report.requests
    cost = sum_cost_text(report.cost, report.unknown_cost, report.cost_sources) if known else "—"
    files = f"{len(report.changes)} file{'' if len(report.changes) == 1 else 's'} changed"
    return f"  {number}. {one_line(report.contender.label)} · {report.status} · {cost} · {files}"


def _comparison_json(comparison: Comparison) -> dict[str, Any]:
    return {
        "id": comparison.id,
        "startedAt": comparison.started_at,
        "endedAt": comparison.ended_at,
        "workspace": str(comparison.workspace),
        "prompt": comparison.prompt,
        "allowed": list(comparison.allowed),
        "kept": comparison.kept + 1 if comparison.kept is not None else None,
        "copiesRemoved": comparison.copies_removed,
        "runs": [
            {"run": number, "label": report.contender.label, **run_json(report)}
            for number, report in enumerate(comparison.reports, 1)
        ],
    }


def list_command(args: argparse.Namespace) -> int:
    """Handler of ``tiny-agent comparisons list``."""
    try:
        comparisons = list_comparisons()
    except TinyAgentError as error:
        return fail("comparison", error)
    if args.json:
        print(json.dumps([_comparison_json(comparison) for comparison in comparisons], ensure_ascii=False))
        return 0
    if not comparisons:
        print("No saved comparisons (tiny-agent compare, or the window's compare view, makes them).")
    for comparison in comparisons:
        started = local_datetime(comparison.started_at).strftime("%Y-%m-%d %H:%M")
        print(f"{one_line(comparison.id)}  {started}  {_state(comparison)}  {comparison.title}")
        for number, report in enumerate(comparison.reports, 1):
            print(_run_text(number, report))
    return 0


def _find(args: argparse.Namespace) -> Comparison:
    """The listed comparison that ``args.id`` names (usage error otherwise)."""
    parser: argparse.ArgumentParser = args.parser
    wanted = args.id.strip()
    found = [comparison for comparison in list_comparisons() if wanted and comparison.id.startswith(wanted)]
    exact = [comparison for comparison in found if comparison.id == wanted]  # ids are folder names: one at most
    if exact:
        return exact[0]
    if not found:
        parser.error(f"no saved comparison {wanted!r} (tiny-agent comparisons list shows them)")
    if len(found) > 1:
        parser.error(f"{wanted!r} names {len(found)} comparisons: give more of the id")
    return found[0]


def keep_command(args: argparse.Namespace) -> int:
    """Handler of ``tiny-agent comparisons keep``."""
    parser: argparse.ArgumentParser = args.parser
    try:
        comparison = _find(args)
    except TinyAgentError as error:
        return fail("comparison", error)
    name = one_line(comparison.id)  # a record is only a file: one line per thing said, whatever it holds
    if args.run > len(comparison.reports):
        parser.error(f"comparison {name} has {len(comparison.reports)} runs, not {args.run}")
    report = comparison.reports[args.run - 1]
    run = f"{args.run} ({one_line(report.contender.label)})"
    copy = report.copy
    if copy is None:
        parser.error(f"the copies of comparison {name} were removed: its changes can no longer be applied")
    if not report.changes:
        parser.error(f"run {run} changed no files: there is nothing to keep")
    if not args.yes:
        listed = "".join(
            f"  {change.status} {one_line(change.path)} (+{change.added} −{change.removed})\n"
            for change in report.changes
        )
        parser.exit(
            2,
            f"Run {run} would change these files in {copy.original}:\n{listed}"
            "Then every run's copy is removed (the sessions are kept). Add --yes to do it.\n",
        )
    try:
        keep_run(comparison, args.run - 1)
    except (TinyAgentError, OSError) as error:
        return fail("comparison", error)
    out = {
        "ok": True,
        "comparisonId": comparison.id,
        "kept": args.run,
        "workspace": str(copy.original),
        "files": [change.path for change in report.changes],
    }
    print(json.dumps(out, ensure_ascii=False))
    return 0


def discard_command(args: argparse.Namespace) -> int:
    """Handler of ``tiny-agent comparisons discard``."""
    try:
        comparison = _find(args)
        discard_copies(comparison)
    except (TinyAgentError, OSError) as error:
        return fail("comparison", error)
    print(json.dumps({"ok": True, "comparisonId": comparison.id, "copiesRemoved": True}))
    return 0
