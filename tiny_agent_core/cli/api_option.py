"""``--api KIND``: the wire API a command's requests are sent in (``chat``, ``run``, ``wire normalize``).

Its own module, not :mod:`~tiny_agent_core.cli.arguments`: the choices come from the API-kind registry, which
imports every adapter, and commands that send nothing (``cost``, ``sessions``…) must not pay for that.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from tiny_agent_core.providers.api_kinds import API_KINDS, DEFAULT_API
from tiny_agent_core.providers.profiles import ProviderProfile


def add_api_option(parser: argparse.ArgumentParser, *, default: str | None) -> None:
    """Add ``--api KIND`` (choices: the registered API kinds; ``default`` ``None``: the profile's own kind)."""
    where = f"default: {default}" if default else f"default: the provider's own, else {DEFAULT_API}"
    parser.add_argument(
        "--api",
        choices=sorted(API_KINDS),
        default=default,
        metavar="KIND",
        help=f"the wire API the server speaks: {', '.join(sorted(API_KINDS))} ({where})",
    )


def with_api(profile: ProviderProfile, api: str | None) -> ProviderProfile:
    """``profile`` speaking API kind ``api`` when one was given (``--api``), else as it is."""
    return profile if api is None else replace(profile, api=api)
