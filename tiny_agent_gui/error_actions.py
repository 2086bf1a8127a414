"""The way out of a failed run: which action the window offers next to a provider error.

Decided from the error's type and ``kind`` (never from its message), for the run's provider:

- 401/403 (:class:`~tiny_agent_core.errors.AuthenticationError`) → open that provider's settings;
- 408/429 (:class:`~tiny_agent_core.errors.RateLimitError`) → retry by itself after ``Retry-After`` (or a short
  default), with a live countdown the user can cancel;
- a refused connection to a server on this machine or the local network → "is it running?" with the command that
  starts the preset's server (``ollama serve``…);
- kind ``context_length`` → compact the session, or start a new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import httpx

from tiny_agent_core.errors import AuthenticationError, ProviderConnectionError, RateLimitError
from tiny_agent_core.local_servers import start_command
from tiny_agent_core.providers.locality import is_local_url
from tiny_agent_core.providers.profiles import ProviderProfile

__all__ = ["CONTEXT_LENGTH", "DEFAULT_RETRY_SECONDS", "MAX_AUTO_RETRIES", "ErrorAction", "action_for"]

CONTEXT_LENGTH = "context_length"
"""The ``kind`` of a provider error saying the prompt is longer than the model's context."""

DEFAULT_RETRY_SECONDS = 10.0
"""How long to wait before retrying a rate-limited request whose response named no time."""

MAX_AUTO_RETRIES = 2
"""Rate-limited retries made without asking, in a row; after that the user retries."""

MAX_WAIT_SECONDS = 600.0
"""A longer ``Retry-After`` is not waited for automatically (the user can still retry)."""

ActionKind = Literal["settings", "rate_limit", "local_server", "context_length"]


@dataclass(frozen=True)
class ErrorAction:
    """What the banner says about a failed run and which actions it offers."""

    kind: ActionKind
    text: str
    """A sentence or two for the banner."""
    retry_after: float | None = None
    """Seconds to wait before retrying by itself (``rate_limit``); ``None``: do not retry by itself."""
    command: str | None = None
    """The command that starts the local server (``local_server``)."""


def action_for(error: BaseException | None, profile: ProviderProfile | None) -> ErrorAction | None:
    """The action for a failed run's ``error`` against ``profile``, or ``None`` (the inline Retry is enough)."""
    if error is None:
        return None
    name = profile.name if profile is not None else "the provider"
    if isinstance(error, AuthenticationError):
        return ErrorAction(
            "settings",
            f"{name} refused the API key (HTTP {error.status}). Check or replace the key in the provider settings.",
        )
    if isinstance(error, RateLimitError):
        wait = error.retry_after if error.retry_after is not None else DEFAULT_RETRY_SECONDS
        if error.retry_after is not None:
            text = f"{name} is rate-limiting requests (HTTP {error.status}) and asked to wait {wait:g} s."
        else:
            text = f"{name} is rate-limiting requests (HTTP {error.status}) without saying how long to wait."
        return ErrorAction("rate_limit", text, retry_after=wait if wait <= MAX_WAIT_SECONDS else None)
    if getattr(error, "kind", None) == CONTEXT_LENGTH:
        window = getattr(error, "context_length", None)
        size = f" ({window:,} tokens)" if isinstance(window, int) and window > 0 else ""
        return ErrorAction(
            "context_length",
            f"The conversation no longer fits in the model's context{size}. Compact it (a summary keeps the gist) "
            "or start a new session.",
        )
    if (
        isinstance(error, ProviderConnectionError)
        and isinstance(error.__cause__, httpx.ConnectError)
        and profile is not None
        and is_local_url(profile.base_url)
    ):
        command = start_command(profile.id)
        where = profile.base_url
        if command is None:
            text = f"Nothing answers at {where}. Is the server running?"
        else:
            text = f"Nothing answers at {where}. Is {profile.name} running? Start it with: {command}"
        return ErrorAction("local_server", text, command=command)
    return None
