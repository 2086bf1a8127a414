"""The environment of the process tools' children (``bash``, ``bg``): an allowlist, and never a secret.

A child gets only the variables named in :data:`BASE_NAMES` (plus every ``LC_*``) taken from this process's
environment, then the variables the user configured for the workspace (``extra_env``), which may override
them. A variable whose name looks like a secret (:func:`looks_secret`) is dropped wherever it comes from, even
when configured: provider keys live in this process's environment and must not reach a command the model wrote.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["BASE_NAMES", "SECRET_WORDS", "child_environment", "looks_secret", "refused_names"]

BASE_NAMES = frozenset({"PATH", "HOME", "LANG", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR"})
"""Variables passed through from this process's environment (with every ``LC_*``)."""

SECRET_WORDS = (
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "PRIVATE",
    "BEARER",
    "JWT",
)
"""Name parts that make a variable a secret: a part (split at ``_``, ``-``, ``.``, digits and camelCase) that is
one of these, its plural, or ends with one (``APIKEY``, ``OAUTH``, ``DB_PASS``), case-insensitively."""

_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


def looks_secret(name: str) -> bool:
    """Whether the variable ``name`` may hold a secret (see :data:`SECRET_WORDS`)."""
    parts = [part.upper() for part in _PARTS.findall(name)]
    return any(part.endswith(word) or part == f"{word}S" for part in parts for word in SECRET_WORDS)


def _valid_name(name: str) -> bool:
    return bool(name) and "=" not in name and "\0" not in name


def refused_names(extra_env: Mapping[str, str]) -> list[str]:
    """The configured names :func:`child_environment` drops (secret-looking or malformed), for a settings view."""
    return [name for name in extra_env if looks_secret(name) or not _valid_name(name) or "\0" in extra_env[name]]


def child_environment(
    extra_env: Mapping[str, str] | None = None, *, source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The whole environment of a tool's child: the allowlisted part of ``source`` (default ``os.environ``),
    then ``extra_env``, minus anything secret-looking. ``PATH`` falls back to ``os.defpath``."""
    source = os.environ if source is None else source
    environment = {
        name: value
        for name, value in source.items()
        if (name in BASE_NAMES or name.startswith("LC_")) and "\0" not in value
    }
    refused = set(refused_names(extra_env or {}))
    environment.update((name, value) for name, value in (extra_env or {}).items() if name not in refused)
    environment.setdefault("PATH", os.defpath)
    return {name: value for name, value in environment.items() if not looks_secret(name)}
