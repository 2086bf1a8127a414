"""Short, recognisable tags for model ids, for places with little room (the session list's rows).

A model id carries more than a person scans for: the provider's namespace (``anthropic/``, ``deepseek/``), a
serving tag (``:7b``, ``:free``), a release date (``-2024-08-06``, ``-20241022``, ``-0613``) or ``-latest``.
:func:`short_model_tag` drops those, and names Claude models by family and version (``sonnet-4.5``) whichever of
Anthropic's two naming orders the id uses. What remains is never empty: an id that would lose everything is
returned as it was. The full id stays available (tooltips, the inspector); the tag is only a display form.
"""

from __future__ import annotations

import re

__all__ = ["TAG_MAX", "short_model_tag"]

TAG_MAX = 40
"""Longest tag returned (characters, an ellipsis included): a model id is untrusted text."""

_DATE = re.compile(r"(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}))$")
"""A release date at the end: ``-2024-08-06``, ``-20241022``, ``@20240620`` or a four-digit ``-0613``/``-2409``."""
_LATEST = re.compile(r"-latest$", re.IGNORECASE)
_CLAUDE_NEW = re.compile(r"^claude-(opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2}))?$", re.IGNORECASE)
"""``claude-sonnet-4-5``, ``claude-opus-4.1``, ``claude-sonnet-4``."""
_CLAUDE_OLD = re.compile(r"^claude-(\d+)(?:[-.](\d{1,2}))?-(opus|sonnet|haiku)$", re.IGNORECASE)
"""``claude-3-5-sonnet``, ``claude-3-opus``."""


def _claude(name: str) -> str | None:
    match = _CLAUDE_NEW.match(name)
    if match is not None:
        family, major, minor = match.groups()
    else:
        match = _CLAUDE_OLD.match(name)
        if match is None:
            return None
        major, minor, family = match.groups()
    version = major if minor is None else f"{major}.{minor}"
    return f"{family.lower()}-{version}"


def short_model_tag(model: str) -> str:
    """The short display tag of a model id: ``anthropic/claude-sonnet-4.5`` → ``sonnet-4.5``, ``gpt-4o-2024-08-06``
    → ``gpt-4o``, ``qwen2.5-coder:7b`` → ``qwen2.5-coder``, ``deepseek/deepseek-chat`` → ``deepseek-chat``.

    Whitespace is trimmed; an empty id gives ``""``; at most :data:`TAG_MAX` characters.
    """
    full = " ".join(model.split())
    name = full.rsplit("/", 1)[-1] or full
    name = name.split(":", 1)[0] or name
    for pattern in (_LATEST, _DATE):
        shorter = pattern.sub("", name)
        if shorter:
            name = shorter
    name = _claude(name) or name
    return name if len(name) <= TAG_MAX else name[: TAG_MAX - 1] + "…"
