"""``tiny-agent run``: run one prompt to completion in a workspace, without asking anyone.

``tiny-agent run --workspace DIR --base-url URL --model M [--api-key-env VAR] [--allow TOOL]... [--session ID]
[--timeout SECONDS] "prompt"``

- Only the tools named by ``--allow`` (``read``, ``write``, ``edit``, ``bash``, ``bg``) are offered, and any other
  call is denied (recorded as a started tool with an error result, so the model learns it was denied).
- The session is written to ``DIR/.tiny-agent/sessions/`` (a new one, or ``--session ID``, which is first
  recovered if a crash left it unfinished); the index and ledger go to the user data folder (platformdirs, so
  the XDG variables move it; ``TINY_AGENT_DATA_DIR`` overrides it).
- The answer text streams to stdout as it arrives. stderr gets progress lines (tool calls) and finally one JSON
  line: ``{"sessionId", "outcome", "usage": {input, output, cacheRead, cacheWrite}, "cost": "<decimal>" or null,
  "costUnknownRequests": n, "requests": n, "error"?: {"kind", "message", "status"?, "retryAfter"?}}``.
- Exit 0 when the run completed, 2 when it failed or was aborted (or recovery was blocked).

The key is read from the environment variable VAR and never written anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from tiny_agent_core.agent import events
from tiny_agent_core.agent.loop import Agent, RequestRecord, RunResult
from tiny_agent_core.agent.recording import LedgerRecorder
from tiny_agent_core.errors import ProviderConfigurationError, ProviderError, TinyAgentError
from tiny_agent_core.ledger import connect
from tiny_agent_core.providers.client import ProviderClient, error_summary
from tiny_agent_core.providers.profiles import check_api_key, profile_for_base_url
from tiny_agent_core.providers.transport import Timeouts
from tiny_agent_core.session.store import SessionStore, find_session
from tiny_agent_core.tools.approval import non_interactive
from tiny_agent_core.tools.registry import BUILTIN_NAMES, builtin_tools


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run one prompt to completion in a workspace (non-interactive)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", help="the user message")
    parser.add_argument("--workspace", required=True, type=Path, help="the folder the agent works in")
    parser.add_argument("--base-url", required=True, help="e.g. https://openrouter.ai/api/v1")
    parser.add_argument("--model", required=True, help="model id")
    parser.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    parser.add_argument("--allow", action="append", default=[], choices=BUILTIN_NAMES, metavar="TOOL")
    parser.add_argument("--session", metavar="ID", help="continue this session instead of starting a new one")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS", help="read timeout")
    parser.set_defaults(handler=run_command, parser=parser)


class _Printer:
    """Streams answer text to stdout and tool activity to stderr."""

    def __init__(self) -> None:
        self.requests: list[RequestRecord] = []

    def __call__(self, event: events.AgentEvent) -> None:
        if isinstance(event, events.TextDelta):
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif isinstance(event, events.ToolStarted):
            print(f"◆ {event.name} {json.dumps(event.arguments, ensure_ascii=False)[:200]}", file=sys.stderr)
        elif isinstance(event, events.ToolFinished):
            first = event.content.splitlines()[0][:120] if event.content else ""
            print(f"└ {event.outcome}: {first}", file=sys.stderr)
        elif isinstance(event, events.StepFinished) and event.message.calls and event.message.content:
            sys.stdout.write("\n")


def _summary(store: SessionStore, result: RunResult, records: list[RequestRecord]) -> dict[str, Any]:
    known = [r.cost.amount for r in records if r.cost.amount is not None]
    total = sum(known, Decimal(0)) if known else None
    out: dict[str, Any] = {
        "sessionId": store.session_id,
        "outcome": result.outcome,
        "usage": store.state.usage.as_dict(),
        "cost": None if total is None else format(total, "f"),
        "costUnknownRequests": len(records) - len(known),
        "requests": len(records),
    }
    error = result.error
    if isinstance(error, ProviderError):
        out["error"] = error_summary(error)
    elif error is not None:
        out["error"] = {"kind": "agent_error", "message": str(error)}
    return out


async def _run(args: argparse.Namespace, store: SessionStore, key: str | None) -> int:
    workspace = args.workspace.resolve()
    profile = profile_for_base_url(args.base_url)
    policy, approver = non_interactive(args.allow)
    printer = _Printer()
    conn = connect()
    recorder = LedgerRecorder(conn, store.path, workspace, secrets=[key] if key else [])

    def record(request: RequestRecord) -> None:
        printer.requests.append(request)
        recorder(request)

    async with ProviderClient() as client:
        agent = Agent(
            store=store,
            client=client,
            profile=profile,
            model=args.model,
            workspace=workspace,
            tools=builtin_tools(workspace, names=args.allow),
            policy=policy,
            approver=approver,
            api_key=key,
            timeouts=Timeouts(connect=min(10.0, args.timeout), read=args.timeout),
            on_event=printer,
            record_request=record,
        )
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, lambda: asyncio.ensure_future(agent.abort()))
        try:
            recovered = await agent.resume()
            if recovered is not None:
                print(f"recovered an unfinished operation: {recovered.outcome}", file=sys.stderr)
            result = await agent.run(args.prompt)
        except TinyAgentError as error:
            result = RunResult("failed", error=error)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            await agent.tools.close()
    if sys.stdout.isatty():
        sys.stdout.write("\n")
    sys.stdout.flush()
    recorder.close()
    conn.close()
    print(json.dumps(_summary(store, result, printer.requests), ensure_ascii=False), file=sys.stderr, flush=True)
    return 0 if result.outcome == "completed" else 2


def run_command(args: argparse.Namespace) -> int:
    """Handler of ``tiny-agent run``."""
    if not args.prompt.strip():
        args.parser.error("the prompt is empty")
    if not args.workspace.is_dir():
        args.parser.error(f"{args.workspace} is not a folder")
    key = None
    if args.api_key_env:
        value = os.environ.get(args.api_key_env, "").strip()
        if not value:
            args.parser.error(f"the environment variable {args.api_key_env} is not set (it should hold the API key)")
        try:
            key = check_api_key(value)
        except ProviderConfigurationError as error:
            args.parser.error(f"{args.api_key_env}: {error}")
    try:
        if args.session:
            store = SessionStore.open(find_session(args.workspace, args.session))
        else:
            store = SessionStore.create(
                args.workspace, model=args.model, provider=profile_for_base_url(args.base_url).id
            )
    except (TinyAgentError, OSError, ValueError) as error:
        print(json.dumps({"error": {"kind": "session", "message": str(error)}}), file=sys.stderr)
        return 2
    print(f"session {store.session_id} ({store.path})", file=sys.stderr, flush=True)
    try:
        return asyncio.run(_run(args, store, key))
    finally:
        store.close()
