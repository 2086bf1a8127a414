"""``tiny-agent chat``: one streamed request to a provider, from the command line.

``tiny-agent chat --base-url URL [--api KIND] [--model M] [--api-key-env VAR] [--timeout SECONDS] "prompt"``

- Sends one request (no tools) in the API kind ``--api`` (``openai-chat``, ``anthropic``, ``openai-responses``…;
  default: the kind of the provider the base URL belongs to, else ``openai-chat``) with the prompt as the only
  user message and the key read from
  the environment variable VAR (default: the preset's variable, e.g. ``OPENAI_API_KEY``, when the base URL is
  a known provider; none for local servers). Without ``--model`` the first id of ``GET /models`` is used.
- Writes the answer text to stdout as it arrives (exactly the text; a final newline only on a terminal).
- Success, exit 0: one JSON line on stderr
  ``{"stopReason", "usage": {input, output, cacheRead, cacheWrite} or null, "latencyMs", "ttftMs", "requestId",
  "tokensPerSecond"}`` (``latencyMs`` from sending to the complete response; ``ttftMs`` to the first answer token,
  null if none; ``requestId`` the provider's request id header, else its response id, else null;
  ``tokensPerSecond`` output tokens per second from the first token to the last, null when usage is unknown).
- Failure, exit 2: the last stderr line is ``{"error": {"kind", "message", "status"?, "retryAfter"?}}``, ``kind``
  one of ``http_error``, ``context_length``, ``timeout``, ``connection``, ``malformed``, ``content_filter``,
  ``provider_error``, ``empty_response`` (the model answered no text at all).
- ``--timeout`` bounds each request as a whole, from sending it to the last byte of the response (so it is also
  the longest silence allowed): a server that trickles bytes cannot keep it open longer. Without it, a request
  may be silent for 120 s and take 600 s in all (the defaults of
  :class:`~tiny_agent_core.providers.transport.Timeouts`).
- Invalid arguments exit 2 with one line ``tiny-agent chat: error: <message>`` on stderr: a base URL that is not
  ``http``/``https`` with a host (IPv6 in brackets) and a port in 1–65535, a timeout that is not a number of
  seconds above 0, an empty prompt, a missing key variable.

Nothing is written to disk, and the key never appears in the output.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from tiny_agent_core.agent.events import tokens_per_second
from tiny_agent_core.cli.api_option import add_api_option, with_api
from tiny_agent_core.cli.arguments import base_url, request_timeouts, seconds
from tiny_agent_core.errors import EmptyResponseError, ProviderConfigurationError, ProviderError
from tiny_agent_core.providers.client import ChatCompleted, ProviderClient, error_summary
from tiny_agent_core.providers.profiles import ProviderProfile, check_api_key, list_models, profile_for_base_url
from tiny_agent_core.providers.results import StreamedText
from tiny_agent_core.providers.transport import Timeouts


def register(subparsers: Any) -> None:
    """Add the ``chat`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "chat",
        help="send one prompt to an OpenAI-compatible server and stream the answer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", help="the user message")
    parser.add_argument(
        "--base-url", required=True, type=base_url, help="e.g. https://api.openai.com/v1 or http://localhost:11434/v1"
    )
    add_api_option(parser, default=None)
    parser.add_argument("--model", help="model id (default: the first model the server lists)")
    parser.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="longest time a request may take (default: 120 s of silence, 600 s in all)",
    )
    parser.set_defaults(handler=run_chat, parser=parser)


def _fail(error: ProviderError) -> int:
    sys.stdout.flush()
    print(json.dumps({"error": error_summary(error)}, ensure_ascii=False), file=sys.stderr, flush=True)
    return 2


def _api_key(args: argparse.Namespace, profile: ProviderProfile) -> str | None:
    variable = args.api_key_env or profile.key_env
    if not variable:
        return None
    key = os.environ.get(variable, "").strip()
    if not key and args.api_key_env:
        args.parser.error(f"the environment variable {variable} is not set (it should hold the API key)")
    if not key:
        return None
    parser: argparse.ArgumentParser = args.parser
    try:
        return check_api_key(key)
    except ProviderConfigurationError as error:
        parser.error(f"{variable}: {error}")


async def _chat(args: argparse.Namespace, profile: ProviderProfile, key: str | None, timeouts: Timeouts) -> int:
    async with ProviderClient() as client:
        model = args.model
        try:
            if not model:
                models = await list_models(client.http, profile, key, timeouts=timeouts)
                if not models:
                    raise ProviderError(f"{profile.base_url} lists no models; pass --model.")
                model = models[0]
            stream = client.stream_chat(
                profile,
                model=model,
                messages=[{"role": "user", "content": args.prompt}],
                api_key=key,
                timeouts=timeouts,
            )
            async with stream:
                async for event in stream:
                    if isinstance(event, StreamedText):
                        sys.stdout.write(event.text)
                        sys.stdout.flush()
                    elif isinstance(event, ChatCompleted):
                        if not (event.response.message.content or "").strip():
                            raise EmptyResponseError(
                                "The model returned an empty answer (finish_reason: "
                                f"{event.response.stop_reason}); try again or another model.",
                                usage=event.response.usage,
                            )
                        return _succeed(event)
        except ProviderError as error:
            return _fail(error)
    raise AssertionError("unreachable: a stream ends with a result or a failure")  # pragma: no cover


def _ms(value: float | None) -> int | None:
    return None if value is None else round(value)


def _succeed(event: ChatCompleted) -> int:
    if sys.stdout.isatty():
        sys.stdout.write("\n")
    sys.stdout.flush()
    response, capture = event.response, event.capture
    summary = {
        "stopReason": response.stop_reason,
        "usage": response.usage.as_dict() if response.usage else None,
        "latencyMs": _ms(capture.timings.done_ms),
        "ttftMs": _ms(capture.timings.first_token_ms),
        "requestId": capture.request_id or response.response_id,
        "tokensPerSecond": tokens_per_second(
            response.usage.output if response.usage else None,
            capture.timings.done_ms,
            capture.timings.first_token_ms,
            streamed=capture.stream,
        ),
    }
    print(json.dumps(summary), file=sys.stderr, flush=True)
    return 0


def run_chat(args: argparse.Namespace) -> int:
    """Handler of ``tiny-agent chat``."""
    if not args.prompt.strip():
        args.parser.error("the prompt is empty")
    profile = with_api(profile_for_base_url(args.base_url), args.api)
    key = _api_key(args, profile)
    timeouts = request_timeouts(args.timeout)
    return asyncio.run(_chat(args, profile, key, timeouts))
