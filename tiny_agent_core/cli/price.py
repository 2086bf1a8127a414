"""``tiny-agent price``: what one request with the given usage costs, and where the number came from.

``tiny-agent price --provider P --model M --input N --output N [--cache-read N] [--cache-write N] [--at TIME]``

``--input`` is the *uncached* prompt tokens (the ``input`` bucket of a usage fact); cache reads and writes are
given separately and are not part of it. ``--at`` is the request's time (ISO 8601; naive = UTC; default now),
which matters for time-dependent prices. No provider figure and no user override are involved, so the source is
the price table, ``local`` (a local server's preset: no API charge) or unknown.

Output, one JSON object on stdout, exit 0 (an unknown price is an answer, not an error):
``{"cost": "0.0123" | null, "source": "price_table" | "local" | null, "dataVersion": "genai-prices 0.2.3" | null,
"detail": "..."}``. ``cost`` is the exact decimal in US dollars, never in exponent notation; ``null`` means
unknown (never ``"0"``; a local server's ``"0"`` has the source ``local``). Invalid arguments exit 2 with argparse's
message on stderr.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from tiny_agent_core.pricing import Cost, price_request
from tiny_agent_core.usage import MAX_SAFE_INTEGER, Usage


def register(subparsers: Any) -> None:
    """Add ``price``."""
    price = subparsers.add_parser("price", help="price one request's token usage")
    price.add_argument("--provider", required=True, help="provider profile id (openai, openrouter, ollama, …)")
    price.add_argument("--model", required=True, help="model id as sent to the provider")
    price.add_argument("--input", type=_tokens, required=True, metavar="N", help="uncached prompt tokens")
    price.add_argument("--output", type=_tokens, required=True, metavar="N", help="completion tokens")
    price.add_argument("--cache-read", type=_tokens, default=0, metavar="N", help="prompt tokens read from cache")
    price.add_argument("--cache-write", type=_tokens, default=0, metavar="N", help="prompt tokens written to cache")
    price.add_argument("--at", type=datetime.fromisoformat, metavar="TIME", help="request time, ISO 8601 (UTC)")
    price.set_defaults(handler=run_price)


def _tokens(text: str) -> int:
    """A token count argument: an integer in [0, 2^53-1]."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value <= MAX_SAFE_INTEGER:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2^53-1, got {value}")
    return value


def cost_json(cost: Cost) -> dict[str, Any]:
    """The command's JSON object for ``cost``."""
    return {
        "cost": None if cost.amount is None else format(cost.amount, "f"),
        "source": cost.source,
        "dataVersion": cost.data_version,
        "detail": cost.detail,
    }


def run_price(args: argparse.Namespace) -> int:
    """Handler of ``price``."""
    usage = Usage(args.input, args.output, args.cache_read, args.cache_write)
    cost = price_request(provider=args.provider, model=args.model, usage=usage, provider_cost=None, at=args.at)
    print(json.dumps(cost_json(cost), ensure_ascii=False))
    return 0
