"""Argument types shared by the subcommands: each checks one value up front, so a bad value is a usage error.

Each function is an argparse ``type=``: it returns the parsed value or raises ``argparse.ArgumentTypeError`` with
a message that names the problem (argparse prefixes it with the option, prints one line and exits 2).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from tiny_agent_core.providers.transport import Timeouts

_N = TypeVar("_N", int, float)

MAX_TIMEOUT_SECONDS = 86_400.0
"""The longest accepted timeout: a day."""


def base_url(text: str) -> str:
    """An ``http``/``https`` URL with a host (a bracketed IPv6 address is fine) and a port, if any, in 1–65535."""
    url = text.strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid URL: {error}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise argparse.ArgumentTypeError(f"{text!r} must start with http:// or https://")
    host = parts.hostname
    if not host or any(character.isspace() or not character.isprintable() for character in host):
        raise argparse.ArgumentTypeError(f"{text!r} has no valid host name")
    if port == 0:
        raise argparse.ArgumentTypeError(f"{text!r} has port 0; a port must be between 1 and 65535")
    return url


def _number(text: str, convert: Callable[[str], _N], what: str) -> _N:
    try:
        return convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None


def seconds(text: str) -> float:
    """A timeout: a finite number of seconds above 0 and at most :data:`MAX_TIMEOUT_SECONDS`."""
    value = _number(text, float, "a number of seconds")
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT_SECONDS):
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds above 0 and at most {MAX_TIMEOUT_SECONDS:g}, got {text!r}"
        )
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    value = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def http_status(text: str) -> int:
    """An HTTP status code, 100–599."""
    value = _number(text, int, "an HTTP status code")
    if not 100 <= value <= 599:
        raise argparse.ArgumentTypeError(f"an HTTP status code is between 100 and 599, got {value}")
    return value


def existing_folder(text: str) -> Path:
    """A folder that exists."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is not a folder" if path.exists() else f"{text} does not exist")
    return path


def request_timeouts(timeout: float | None) -> Timeouts:
    """The timeouts of one model request: ``--timeout`` bounds it as a whole (and so every silence); without it,
    the defaults of :class:`Timeouts` (120 s of silence, 600 s in all)."""
    if timeout is None:
        return Timeouts()
    return Timeouts(connect=min(10.0, timeout), read=timeout, total=timeout)
