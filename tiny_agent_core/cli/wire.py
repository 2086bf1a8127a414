"""``tiny-agent wire normalize``: run recorded provider bytes through the adapter (filled in by issue 2)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``wire`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser("wire", help="inspect provider wire data")
    parser.set_defaults(handler=lambda args: 2)
