"""The ``tiny-agent`` command line: the core usable without the window (SPEC §10).

Each subcommand lives in its own module with a ``register(subparsers)`` function that adds its parser and sets
``handler`` to a function ``(args) -> exit code``. Output contracts are documented in each module.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tiny_agent_core.cli import chat, index, price, run, session, wire


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(prog="tiny-agent", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    wire.register(subparsers)
    index.register(subparsers)
    chat.register(subparsers)
    session.register(subparsers)
    price.register(subparsers)
    run.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tiny-agent`` console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    sys.stdout.flush()
    return code
