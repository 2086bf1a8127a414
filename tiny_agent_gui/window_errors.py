"""How the main window offers the way out of a failed run: the banner's text and buttons for each
:class:`~tiny_agent_gui.error_actions.ErrorAction`, and the count of automatic retries.

A rate limit that says when to retry is retried by itself after a countdown (cancellable), at most
:data:`~tiny_agent_gui.error_actions.MAX_AUTO_RETRIES` times in a row; the window resets the count when the user
sends a prompt, opens a session, or a run completes. What the buttons do is the window's (given as callbacks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tiny_agent_gui.banner import Action, Banner
from tiny_agent_gui.error_actions import MAX_AUTO_RETRIES, ErrorAction

TOOLS_DROPPED_ADVICE = (
    " What to do: start the server with a chat template that supports tools (llama-server: --jinja), use a model "
    "whose template has tools, or change this provider's dialect settings (Settings › Providers)."
)
"""Appended to the core's :class:`~tiny_agent_core.agent.events.ToolsDropped` message in the banner."""


class ShowBanner(Protocol):
    """The window's ``show_banner``: a message with up to two action buttons."""

    def __call__(
        self,
        text: str,
        action: str | None = None,
        callback: Callable[[], None] | None = None,
        *,
        more: Action | None = None,
    ) -> None:
        """Show ``text`` above the transcript, with the ``action`` button (and ``more``) if given."""


class ErrorOffers:
    """Offers the way out of a failed run in the banner, and counts the automatic retries."""

    def __init__(
        self,
        banner: Banner,
        show_banner: ShowBanner,
        *,
        open_settings: Callable[[str | None], None],
        retry: Callable[[], None],
        retry_cancelled: Callable[[], None],
        copy: Callable[[str], None],
        compact: Callable[[], None],
        new_session: Callable[[], None],
    ) -> None:
        self._banner = banner
        self._show_banner = show_banner
        self._open_settings = open_settings
        self._retry = retry
        self._retry_cancelled = retry_cancelled
        self._copy = copy
        self._compact = compact
        self._new_session = new_session
        self._auto_retries = 0

    def reset(self) -> None:
        """Start counting automatic retries again (a new prompt, another session, a completed run)."""
        self._auto_retries = 0

    def offer(self, action: ErrorAction, profile_id: str | None) -> None:
        """Show the way out of a failed run (see :mod:`tiny_agent_gui.error_actions`); ``profile_id``: the
        provider profile the run used, opened by "Open provider settings"."""
        if action.kind == "settings":
            self._show_banner(action.text, "Open provider settings", lambda: self._open_settings(profile_id))
        elif action.kind == "rate_limit":
            if action.retry_after is not None and self._auto_retries < MAX_AUTO_RETRIES:
                self._auto_retries += 1
                self._banner.start_countdown(
                    action.retry_after,
                    lambda left: f"{action.text} Retrying by itself in {left} s…",
                    self._retry,
                    [("Retry now", self._retry), ("Cancel retry", self._retry_cancelled)],
                )
            else:
                self._show_banner(f"{action.text} Retry when you are ready.", "Retry", self._retry)
        elif action.kind == "local_server":
            command = action.command
            copy: Action | None = ("Copy command", lambda: self._copy(command)) if command else None
            self._show_banner(action.text, "Retry", self._retry, more=copy)
        elif action.kind == "context_length":
            self._show_banner(action.text, "Compact", self._compact, more=("New session", self._new_session))
