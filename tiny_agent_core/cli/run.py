"""``tiny-agent run``: run one prompt to completion in a workspace, without asking anyone.

``tiny-agent run --workspace DIR --base-url URL [--api KIND] --model M [--api-key-env VAR] [--allow TOOL]...
[--session ID] [--timeout SECONDS] [--max-steps N] [--mcp-config FILE --mcp ALIAS...] "prompt"``

- ``--api KIND`` is the wire API the server speaks (``openai-chat``, ``anthropic``, ``openai-responses``…;
  default: the kind of the provider the base URL belongs to, else ``openai-chat``).

- Only the built-ins named by ``--allow`` (``read``, ``write``, ``edit``, ``bash``, ``bg``) are offered, and any
  other call is denied (recorded as a started tool with an error result, so the model learns it was denied). A
  call the risk classifier (:mod:`tiny_agent_core.tools.risk`) flags — ``rm -rf``, a force push, ``curl | sh``, a
  write into ``.git/`` through a planted symlink… — is denied even for an allowed tool, unless ``--allow-risky``:
  in the window such a call always asks, and here nobody can be asked.
- MCP servers (:mod:`tiny_agent_core.mcp`): ``--mcp-config FILE`` names the catalog (``{"servers": …}`` or Claude
  Desktop's ``{"mcpServers": …}``) and each ``--mcp ALIAS`` one of its servers; only those are connected (all
  at once, 10 s at most each, before the session is touched) and their tools are offered beside the built-ins.
  ``--allow mcp:ALIAS`` lets every tool of that server run without asking, ``--allow mcp:ALIAS/TOOL`` one tool;
  any other MCP call is denied with a hint naming its ``--allow mcp:ALIAS/TOOL``. Progress lines name MCP tools
  ``mcp:ALIAS/TOOL``. The servers are closed when the run ends. A server that cannot be connected, or an
  ``--allow mcp:…`` that covers no offered tool, exits 2 with one stderr line ``{"error": {"kind": "mcp",
  "cause", "alias"?, "message"}}`` (``cause``: ``timeout``, ``connection_failed``, ``invalid_server``,
  ``configuration``, or ``not_offered`` for the ``--allow``) and no session created or changed. Without
  ``--mcp`` the MCP SDK is not even imported.
- The session is written to ``DIR/.tiny-agent/sessions/`` (a new one, or ``--session ID``, which is first
  recovered if a crash left it unfinished); the index and ledger go to the user data folder (platformdirs, so
  the XDG variables move it; ``TINY_AGENT_DATA_DIR`` overrides it).
- ``--timeout`` bounds each model request as a whole (sending it to the last byte of the answer, so also the
  longest silence; without it, 120 s of silence or 600 s in all, the defaults of
  :class:`~tiny_agent_core.providers.transport.Timeouts`); ``--max-steps`` bounds the model steps of the run (default
  :data:`~tiny_agent_core.agent.loop.DEFAULT_MAX_STEPS`; beyond it the run fails with error kind ``step_limit``).
- If recovering ``--session ID`` does not complete (aborted, failed or blocked), the prompt is not sent: a
  stderr line says so and the run exits 2. A recovered answer and the new one are separated by a ``---`` line.
- The index is opened before the session is touched: when it is damaged it is rebuilt and one
  ``tiny-agent: The index database could not be used (…)`` line says so; when it cannot be opened at all the run
  exits 2 with ``{"error": {"kind": "index", "message"}}`` and nothing written. If recording in the index fails
  during the run, one ``tiny-agent: …`` line says so and the run goes on (the session file holds everything).
- The answer text streams to stdout as it arrives (if the reader closes stdout early, the run goes on without
  it). stderr gets progress lines (tool calls) and finally one JSON line: ``{"sessionId", "outcome", "usage":
  {input, output, cacheRead, cacheWrite} or null, "usageUnknownRequests": n, "cost": "<decimal>" or null,
  "costUnknownRequests": n, "requests": n, "tokensPerSecond": x or null, "contextLength": n or null,
  "toolsDropped": bool or null, "warnings": [{"kind", "message"}], "sandbox": {"sandboxed", "reason", "network"}
  or null (no bash/bg offered), "error"?: {"kind", "message", "status"?, "retryAfter"?}}``. ``usage`` is the
  session's reported total, ``null`` when no request ever reported usage (unknown, not 0);
  ``usageUnknownRequests`` counts this run's requests without usage. ``tokensPerSecond`` is output tokens per
  second over the requests that reported usage: from the first token to the last when streamed, over the whole
  request otherwise (so a non-streamed answer's figure includes the prompt's processing). ``toolsDropped`` is true
  when tools were offered but the server left them out of the prompt (null: no tools offered or no usage to
  tell); ``warnings`` holds that and dialect repairs the server needed (``kind`` ``tools_dropped``,
  ``dialect_learned``), each also a ``tiny-agent: …`` stderr line. When bash or bg is offered but cannot be
  sandboxed, a stderr line says so first; ``--no-network`` runs their commands without network (only inside the
  sandbox).
- Costs use the price overrides of the desktop app's settings (as the index does); a local server's requests are
  "local — no API charge" unless one is set.
- A local server (loopback, private or ``.local`` host) gets the local dialect (``tool_choice: "auto"`` with the
  tools, ``""`` for a tool-call message's null content). ``--context-length TOKENS`` gives the model's context
  window, ``--context-length auto`` asks the server (llama.cpp ``/props``, ``/models`` metadata, Ollama
  ``/api/show``; 5 s at most each; unknown if none says); with a known window, a local server gets ``max_tokens``
  so the answer fits after the prompt.
- When recovery is blocked, the error says what differs from the interrupted step's configuration and a stderr
  line gives the other way out: ``tiny-agent session abandon FILE``.
- Exit 0 when the run completed, 2 when it failed or was aborted (or recovery was blocked). Invalid arguments
  (a workspace that is not a folder, a base URL that is not ``http``/``https`` with a host and a port in
  1–65535, a timeout that is not a number of seconds above 0, a step limit below 1, an ``--allow`` that is neither
  a built-in nor ``mcp:ALIAS[/TOOL]``, ``--mcp`` without ``--mcp-config``, a catalog that cannot be read or used,
  an alias the catalog lacks, an ``--allow mcp:ALIAS`` without ``--mcp ALIAS``) exit 2 with one line
  ``tiny-agent run: error: <message>``.

The key is read from the environment variable VAR and never written anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_agent_core.agent import events
from tiny_agent_core.agent.events import generation_seconds
from tiny_agent_core.agent.loop import DEFAULT_MAX_STEPS, Agent, RequestRecord, RunResult
from tiny_agent_core.agent.recording import LedgerRecorder
from tiny_agent_core.cli.api_option import add_api_option, with_api
from tiny_agent_core.cli.arguments import base_url, existing_folder, positive_int, request_timeouts, seconds
from tiny_agent_core.cli.index import report_recovery
from tiny_agent_core.cli.output import discard_stdout, fail, one_line
from tiny_agent_core.cost_sums import CostSum
from tiny_agent_core.errors import (
    AgentError,
    LedgerError,
    ProviderConfigurationError,
    ProviderError,
    RecoveryBlockedError,
    StepLimitError,
    TinyAgentError,
)
from tiny_agent_core.ledger import connect
from tiny_agent_core.ledger.repricing import settings_overrides
from tiny_agent_core.mcp.allow import McpAllow, allowed_names, is_mcp_spec, parse_allow, split_allow
from tiny_agent_core.mcp.catalog import Catalog, load_catalog
from tiny_agent_core.mcp.errors import McpCatalogError, McpConnectError
from tiny_agent_core.mcp.names import shown_name
from tiny_agent_core.providers.client import ProviderClient, error_summary
from tiny_agent_core.providers.profiles import ProviderProfile, check_api_key, context_length, profile_for_base_url
from tiny_agent_core.session.store import SessionStore, find_session
from tiny_agent_core.tools.approval import non_interactive
from tiny_agent_core.tools.base import Tool
from tiny_agent_core.tools.bash import BashTool
from tiny_agent_core.tools.bg import BgTool
from tiny_agent_core.tools.registry import BUILTIN_NAMES, ToolSet, builtin_tools
from tiny_agent_core.workbench import OpenedSession, Workbench

if TYPE_CHECKING:
    from tiny_agent_core.mcp.tool import McpTool

SEPARATOR = "\n---\n\n"
"""Written to stdout between a recovered answer and the new one (after a line break if the text lacks one)."""


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run one prompt to completion in a workspace (non-interactive)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", help="the user message")
    parser.add_argument("--workspace", required=True, type=existing_folder, help="the folder the agent works in")
    parser.add_argument("--base-url", required=True, type=base_url, help="e.g. https://openrouter.ai/api/v1")
    add_api_option(parser, default=None)
    parser.add_argument("--model", required=True, help="model id")
    parser.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        type=_allow,
        metavar="TOOL",
        help=f"let this tool run without asking: {', '.join(BUILTIN_NAMES)}, mcp:ALIAS or mcp:ALIAS/TOOL",
    )
    parser.add_argument(
        "--mcp-config",
        metavar="FILE",
        help='the MCP catalog: {"servers": …} or Claude Desktop\'s {"mcpServers": …}',
    )
    parser.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="ALIAS",
        help="connect this server of the MCP catalog and offer its tools (repeatable)",
    )
    parser.add_argument("--session", metavar="ID", help="continue this session instead of starting a new one")
    parser.add_argument(
        "--no-network", action="store_true", help="run bash and bg commands without network (needs the sandbox)"
    )
    parser.add_argument(
        "--allow-risky",
        action="store_true",
        help="let allowed tools make risky calls too (rm -rf, force pushes, writes into .git/…); denied otherwise",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="longest time one model request may take (default: 120 s of silence, 600 s in all)",
    )
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        default=DEFAULT_MAX_STEPS,
        metavar="N",
        help=f"most model steps in the run (default {DEFAULT_MAX_STEPS})",
    )
    parser.add_argument(
        "--context-length",
        type=_context_length,
        default=None,
        metavar="TOKENS|auto",
        help="the model's context window, or auto to ask the server (default: unknown)",
    )
    parser.set_defaults(handler=run_command, parser=parser)


AUTO = "auto"
"""``--context-length auto``: ask the server."""


def _context_length(text: str) -> int | str:
    """``--context-length``: a number of tokens, or :data:`AUTO`."""
    return AUTO if text.strip().lower() == AUTO else positive_int(text)


def _allow(text: str) -> str:
    """``--allow``: a built-in's name, ``mcp:ALIAS`` or ``mcp:ALIAS/TOOL``."""
    if is_mcp_spec(text):
        try:
            parse_allow(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    elif text not in BUILTIN_NAMES:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a tool: use {', '.join(BUILTIN_NAMES)}, mcp:ALIAS or mcp:ALIAS/TOOL"
        )
    return text


class _Printer:
    """Streams answer text to stdout and tool activity to stderr."""

    def __init__(self) -> None:
        self.requests: list[RequestRecord] = []
        self.warnings: list[dict[str, str]] = []
        self.tools_dropped = False
        self._last = "\n"
        """The last character written to stdout since the last separator ('\\n' before any)."""
        self._written = False

    def write(self, text: str) -> None:
        """Write answer text to stdout; once the reader has closed it, the run goes on without it."""
        if not text:
            return
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            discard_stdout()
        self._last = text[-1]
        self._written = True

    def separate(self) -> None:
        """Mark the end of a recovered answer, if one was written."""
        if self._written:
            self.write(SEPARATOR if self._last == "\n" else "\n" + SEPARATOR)
            self._written = False

    def __call__(self, event: events.AgentEvent) -> None:
        if isinstance(event, events.TextDelta):
            self.write(event.text)
        elif isinstance(event, events.ToolStarted):
            arguments = json.dumps(event.arguments, ensure_ascii=False)[:200]
            print(f"◆ {shown_name(event.name)} {arguments}", file=sys.stderr)
        elif isinstance(event, events.ToolFinished):
            first = event.content.splitlines()[0][:120] if event.content else ""
            print(f"└ {event.outcome}: {first}", file=sys.stderr)
        elif isinstance(event, events.StepFinished) and event.message.calls and event.message.content:
            self.write("\n")
        elif isinstance(event, events.ToolsDropped):
            self.tools_dropped = True
            self._warn("tools_dropped", event.message)
        elif isinstance(event, events.DialectLearned):
            changes = ", ".join(f"{name}={value}" for name, value in event.changes.items())
            self._warn(
                "dialect_learned",
                f"the server refused a request and accepted it with the outbound repair "
                f"{', '.join(event.repairs)} ({changes}); later requests of this run use it",
            )

    def _warn(self, kind: str, message: str) -> None:
        self.warnings.append({"kind": kind, "message": message})
        print(f"tiny-agent: {message}", file=sys.stderr, flush=True)


_LEDGER_FAILURES = (TinyAgentError, sqlite3.Error, OSError)


class _Ledger:
    """Records the run's requests in the index, never failing the run: the first failure is reported in one
    stderr line and nothing more is recorded (the session file has everything; ``index rebuild`` catches up)."""

    def __init__(self, conn: sqlite3.Connection, session_path: Path, workspace: Path, secrets: Sequence[str]):
        self._recorder: LedgerRecorder | None = None
        try:
            self._recorder = LedgerRecorder(conn, session_path, workspace, secrets=secrets)
        except _LEDGER_FAILURES as error:
            self._give_up(error)

    def __call__(self, request: RequestRecord) -> None:
        if self._recorder is not None:
            try:
                self._recorder(request)
            except _LEDGER_FAILURES as error:
                self._give_up(error)

    def close(self) -> None:
        """Bring the session's index row up to date."""
        if self._recorder is not None:
            try:
                self._recorder.close()
            except _LEDGER_FAILURES as error:
                self._give_up(error)

    def _give_up(self, error: BaseException) -> None:
        self._recorder = None
        print(
            f"tiny-agent: the index stopped recording this run ({one_line(error)}); the session file has all of "
            "it and `tiny-agent index rebuild` brings the index up to date",
            file=sys.stderr,
            flush=True,
        )


def _sandbox(tools: ToolSet) -> dict[str, Any] | None:
    """Whether the offered process tools run sandboxed (``None`` when none is offered)."""
    confined = [tool.confinement for tool in tools.values() if isinstance(tool, BashTool | BgTool)]
    if not confined:
        return None
    status = confined[0].status
    return {"sandboxed": status.available, "reason": status.reason, "network": confined[0].network}


def _tokens_per_second(records: list[RequestRecord]) -> float | None:
    """Output tokens per second of generation, over the requests that reported usage."""
    output = 0
    seconds = 0.0
    for record in records:
        if record.usage is None or record.outcome != "settled":
            continue
        streamed = record.capture.stream if record.capture is not None else True
        took = generation_seconds(record.latency_ms, record.ttft_ms, streamed=streamed)
        if record.usage.output and took:
            output += record.usage.output
            seconds += took
    return round(output / seconds, 1) if seconds else None


def _tools_dropped(printer: _Printer, tools: ToolSet) -> bool | None:
    """True when the server left the offered tools out; ``None`` when no tools were offered or no answer had usage."""
    if printer.tools_dropped:
        return True
    judged = len(tools) > 0 and any(r.usage is not None and r.outcome == "settled" for r in printer.requests)
    return False if judged else None


def _summary(
    store: SessionStore, result: RunResult, printer: _Printer, tools: ToolSet, context: int | None
) -> dict[str, Any]:
    records = printer.requests
    cost = CostSum.of(r.cost for r in records)
    reported = any(r.usage is not None for r in records) or store.state.usage.prompt + store.state.usage.output > 0
    out: dict[str, Any] = {
        "sessionId": store.session_id,
        "outcome": result.outcome,
        "usage": store.state.usage.as_dict() if reported else None,
        "usageUnknownRequests": sum(1 for r in records if r.usage is None),
        "cost": None if cost.total is None else format(cost.total, "f"),
        "costUnknownRequests": cost.unknown,
        "requests": len(records),
        "tokensPerSecond": _tokens_per_second(records),
        "contextLength": context,
        "toolsDropped": _tools_dropped(printer, tools),
        "warnings": printer.warnings,
        "sandbox": _sandbox(tools),
    }
    error = result.error
    if isinstance(error, ProviderError):
        out["error"] = error_summary(error)
    elif isinstance(error, StepLimitError):
        out["error"] = {"kind": error.kind, "message": str(error)}
    elif isinstance(error, RecoveryBlockedError):
        out["error"] = {"kind": "recovery_blocked", "message": str(error), "differences": list(error.differences)}
    elif error is not None:
        out["error"] = {"kind": "agent_error", "message": str(error)}
    return out


async def _recover_then_run(agent: Agent, printer: _Printer, prompt: str) -> RunResult:
    """Finish an operation a crash left open, then run ``prompt`` — only if that recovery completed."""
    recovered = await agent.resume()
    if recovered is None:
        return await agent.run(prompt)
    if recovered.outcome != "completed":
        outcome = recovered.outcome
        print(f"recovering the unfinished operation ended {outcome}; the prompt was not sent", file=sys.stderr)
        error = recovered.error or AgentError(
            f"Recovering the unfinished operation ended {outcome}; the prompt was not sent."
        )
        return RunResult(recovered.outcome, error=error)
    print("recovered an unfinished operation: completed", file=sys.stderr)
    printer.separate()
    return await agent.run(prompt)


async def _run(
    args: argparse.Namespace,
    store: SessionStore,
    profile: ProviderProfile,
    key: str | None,
    ledger: _Ledger,
    client: ProviderClient,
    tools: Sequence[Tool],
    allowed: Sequence[str],
) -> tuple[int, dict[str, Any]]:
    """Run the prompt in ``store`` with ``tools``, only ``allowed`` ever running; the exit code and the summary."""
    policy, approver = non_interactive(allowed, allow_risky=args.allow_risky)
    printer = _Printer()

    def record(request: RequestRecord) -> None:
        printer.requests.append(request)
        ledger(request)

    if args.context_length == AUTO:
        profile = replace(profile, context_length=await context_length(client.http, profile, args.model, key))
    elif args.context_length is not None:
        profile = replace(profile, context_length=args.context_length)
    # Built through the front door, as the window builds its agents; the index is recorded by ``ledger`` (never
    # failing the run, one stderr line on its first failure), so the workbench itself has no index here.
    agent = Workbench.over(None).agent(
        OpenedSession(store),
        client=client,
        profile=profile,
        model=args.model,
        api_key=key,
        on_event=printer,
        approver=approver,
        policy=policy,
        tools=tools,
        price_overrides=settings_overrides(),
        timeouts=request_timeouts(args.timeout),
        max_steps=args.max_steps,
        also_record=record,
    )
    sandbox = _sandbox(agent.tools)
    if sandbox is not None and not sandbox["sandboxed"]:
        print(f"tiny-agent: bash and bg are not sandboxed: {sandbox['reason']}", file=sys.stderr)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, lambda: asyncio.ensure_future(agent.abort()))
    try:
        result = await _recover_then_run(agent, printer, args.prompt)
    except RecoveryBlockedError as error:
        print(
            f"tiny-agent: {one_line(error)} To give up the unfinished operation instead: "
            f"tiny-agent session abandon {store.path}",
            file=sys.stderr,
        )
        result = RunResult("failed", error=error)
    except TinyAgentError as error:
        result = RunResult("failed", error=error)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await agent.tools.close()
    if sys.stdout.isatty():
        printer.write("\n")
    ledger.close()
    summary = _summary(store, result, printer, agent.tools, profile.context_length)
    return 0 if result.outcome == "completed" else 2, summary


async def _connect_mcp(stack: AsyncExitStack, catalog: Catalog | None, aliases: Sequence[str]) -> list[McpTool]:
    """Connect the servers ``aliases`` (closed with ``stack``); their tools. Imports the MCP SDK only when asked."""
    if catalog is None or not aliases:
        return []
    from tiny_agent_core.mcp.servers import McpServers  # loads the SDK (~0.5-1 s): only for a run that uses it

    servers = await stack.enter_async_context(McpServers.connect(catalog, aliases))
    return list(servers.tools())


async def _session_run(
    args: argparse.Namespace,
    conn: sqlite3.Connection,
    profile: ProviderProfile,
    key: str | None,
    session_path: Path | None,
    catalog: Catalog | None,
    builtins: Sequence[str],
    mcp_allows: Sequence[McpAllow],
) -> int:
    """Connect the MCP servers, then (only once they are) create or open the session and run the prompt."""
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(ProviderClient())
        try:
            mcp_tools = await _connect_mcp(stack, catalog, args.mcp)
        except McpConnectError as error:
            failure = {"kind": "mcp", "cause": error.cause, "alias": error.alias, "message": one_line(error)}
            print(json.dumps({"error": failure}, ensure_ascii=False), file=sys.stderr, flush=True)
            return 2
        try:
            allowed = [*builtins, *allowed_names(mcp_allows, mcp_tools)]
        except ValueError as error:
            failure = {"kind": "mcp", "cause": "not_offered", "message": one_line(error)}
            print(json.dumps({"error": failure}, ensure_ascii=False), file=sys.stderr, flush=True)
            return 2
        workspace = args.workspace.resolve()
        tools: list[Tool] = [*builtin_tools(workspace, names=builtins, network=not args.no_network), *mcp_tools]
        try:
            if session_path is not None:
                store = SessionStore.open(session_path)
            else:
                store = SessionStore.create(args.workspace, model=args.model, provider=profile.id)
        except (TinyAgentError, OSError, ValueError) as error:
            return fail("session", error)
        print(f"session {store.session_id} ({store.path})", file=sys.stderr, flush=True)
        try:
            ledger = _Ledger(conn, store.path, workspace, [key] if key else [])
            code, summary = await _run(args, store, profile, key, ledger, client, tools, allowed)
        finally:
            store.close()
    # the servers are closed: the summary is the last line
    print(json.dumps(summary, ensure_ascii=False), file=sys.stderr, flush=True)
    return code


def _api_key(args: argparse.Namespace) -> str | None:
    if not args.api_key_env:
        return None
    parser: argparse.ArgumentParser = args.parser
    value = os.environ.get(args.api_key_env, "").strip()
    if not value:
        parser.error(f"the environment variable {args.api_key_env} is not set (it should hold the API key)")
    try:
        return check_api_key(value)
    except ProviderConfigurationError as error:
        parser.error(f"{args.api_key_env}: {error}")


def _mcp_catalog(args: argparse.Namespace, mcp_allows: Sequence[McpAllow]) -> Catalog | None:
    """The MCP catalog of ``--mcp-config`` with every ``--mcp`` alias in it (else a usage error), or ``None``."""
    parser: argparse.ArgumentParser = args.parser
    if args.mcp and not args.mcp_config:
        parser.error("--mcp needs --mcp-config FILE (the MCP catalog that names the server)")
    not_connected = list(dict.fromkeys(spec.alias for spec in mcp_allows if spec.alias not in args.mcp))
    if not_connected:
        adds = " ".join(f"--mcp {alias}" for alias in not_connected)
        parser.error(f"--allow mcp:{not_connected[0]}: the MCP server is not connected (add {adds})")
    if not args.mcp_config:
        return None
    try:
        catalog = load_catalog(args.mcp_config)
        catalog.select(args.mcp)
    except McpCatalogError as error:
        parser.error(str(error))
    return catalog


def run_command(args: argparse.Namespace) -> int:
    """Handler of ``tiny-agent run``."""
    if not args.prompt.strip():
        args.parser.error("the prompt is empty")
    builtins, mcp_allows = split_allow(args.allow)
    catalog = _mcp_catalog(args, mcp_allows)
    key = _api_key(args)
    profile = with_api(profile_for_base_url(args.base_url), args.api)
    try:
        conn = connect()  # before the session is touched: a failure here leaves nothing half done
    except LedgerError as error:
        return fail("index", error)
    with contextlib.closing(conn):
        report_recovery(conn)
        try:
            session_path = find_session(args.workspace, args.session) if args.session else None
        except (TinyAgentError, OSError, ValueError) as error:
            return fail("session", error)
        return asyncio.run(_session_run(args, conn, profile, key, session_path, catalog, builtins, mcp_allows))
