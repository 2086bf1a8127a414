"""``tiny-agent wire normalize [--api KIND] [--stream] [--status CODE] FILE``: recorded provider bytes → canonical
result.

It runs the code a live request runs, in the API kind ``--api`` (``openai-chat`` by default, ``anthropic``,
``openai-responses``…: that adapter's JSON normalization, its stream accumulator, its HTTP error mapping). Output,
one JSON object on stdout:

- accepted, exit 0: ``{"ok": true, "stopReason", "message", "usage" (or null), "repairs": [names]}``
- rejected, exit 2: ``{"ok": false, "error": {"kind", "message", "status"?, "retryAfter"?}}`` where ``kind`` is
  ``malformed``, ``content_filter``, ``provider_error`` or ``http_error`` (``status`` ≥ 400).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tiny_agent_core.cli.api_option import add_api_option
from tiny_agent_core.cli.arguments import http_status
from tiny_agent_core.errors import ProviderError
from tiny_agent_core.providers.api_kinds import DEFAULT_API, adapter_for, normalize_sse_text
from tiny_agent_core.providers.client import error_summary


def register(subparsers: Any) -> None:
    """Add ``wire normalize``."""
    wire = subparsers.add_parser("wire", help="inspect recorded provider wire data")
    commands = wire.add_subparsers(dest="wire_command", required=True)
    normalize = commands.add_parser(
        "normalize", help="normalize a recorded response body or SSE stream into the canonical result"
    )
    normalize.add_argument("file", metavar="FILE", help="JSON response body, or raw SSE text with --stream; - = stdin")
    normalize.add_argument("--stream", action="store_true", help="FILE is the raw text/event-stream")
    add_api_option(normalize, default=DEFAULT_API)
    normalize.add_argument(
        "--status", type=http_status, default=200, help="HTTP status the bytes came with, 100-599 (default 200)"
    )
    normalize.set_defaults(handler=run_normalize)


def normalize_bytes(data: bytes, *, stream: bool, status: int, api: str = DEFAULT_API) -> dict[str, Any]:
    """The command's JSON result for ``data`` in API kind ``api`` (never raises a ProviderError)."""
    try:
        adapter = adapter_for(api)
        if status >= 400:
            raise adapter.http_error(status, data, None)
        result = normalize_sse_text(adapter, data.decode("utf-8")) if stream else adapter.normalize_body(data)
    except UnicodeDecodeError as error:
        return {
            "ok": False,
            "error": {"kind": "malformed", "message": f"The stream is not valid UTF-8: {error}."},
        }
    except ProviderError as error:
        return {"ok": False, "error": error_summary(error)}
    return result.to_json()


def run_normalize(args: argparse.Namespace) -> int:
    """Handler of ``wire normalize``."""
    try:
        if args.file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as handle:
                data = handle.read()
    except OSError as error:
        print(f"tiny-agent: cannot read {args.file}: {error.strerror}", file=sys.stderr)
        return 2
    out = normalize_bytes(data, stream=args.stream, status=args.status, api=args.api)
    print(json.dumps(out, ensure_ascii=False))
    return 0 if out["ok"] else 2
