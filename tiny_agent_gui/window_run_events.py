"""How the main window answers a run's events (from the session controller and its bridge): the end of an operation,
a request form learned from the server, tools the model never saw, a tool's live output, a failed or unfinished
operation, and Retry.

What a failure means and how it can be retried is the core's (the timeline's notices) and
:mod:`~tiny_agent_gui.error_actions`'s; this module only puts it into the window's banner, status bar and
inspector. What the server taught during an operation is said when it is learned and again when the operation
ends (a tool's progress messages replace it in the status bar meanwhile). The step figures of the status bar are
the window's (they are reset when a session opens).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtGui import QGuiApplication

from tiny_agent_core.agent.events import DialectLearned, ToolsDropped
from tiny_agent_core.agent.loop import RunResult
from tiny_agent_core.timeline import NoticeItem
from tiny_agent_gui.error_actions import action_for
from tiny_agent_gui.window_errors import TOOLS_DROPPED_ADVICE, ErrorOffers
from tiny_agent_gui.window_settings import store_learned_dialect
from tiny_agent_gui.window_status import learned_words

if TYPE_CHECKING:
    from tiny_agent_gui.main_window import MainWindow

_log = logging.getLogger(__name__)


class RunEvents:
    """The window's answers to a run's events, and the way out of a failed run (:attr:`offers`).

    ``open_provider_settings`` opens the settings on a provider profile (``None``: the first); ``save_settings``
    saves the settings (with a banner if they cannot be); ``update_status`` and ``update_actions`` bring the status
    bar and the session actions up to date.
    """

    def __init__(
        self,
        window: MainWindow,
        *,
        open_provider_settings: Callable[[str | None], None],
        save_settings: Callable[[], None],
        update_status: Callable[[], None],
        update_actions: Callable[[], None],
    ) -> None:
        self._window = window
        self._open_provider_settings = open_provider_settings
        self._save_settings = save_settings
        self._update_status = update_status
        self._update_actions = update_actions
        self._learned_notice: str | None = None
        """What the server taught during the running operation, said again when it ends."""
        self.offers = ErrorOffers(
            window.banner,
            window.show_banner,
            open_settings=open_provider_settings,
            retry=self.retry_last,
            retry_cancelled=self.retry_cancelled,
            copy=self.copy,
            compact=window.controller.compact,
            new_session=window.new_session,
        )
        """The banner's ways out of a failed run; the window resets its retry count when a prompt is sent or a
        session opens."""

    def wire(self) -> None:
        """Answer the controller's and its bridge's run events, and the transcript's inline Retry."""
        window = self._window
        controller, bridge = window.controller, window.controller.bridge
        window.transcript.retry_requested.connect(self.retry)
        controller.dialect_learned.connect(self.dialect_learned)
        bridge.tools_dropped.connect(self.tools_dropped)
        controller.finished.connect(self.finished)
        controller.failed.connect(self.failed)
        controller.recovery_blocked.connect(self.recovery_blocked)
        controller.unfinished.connect(self.unfinished)
        bridge.tool_started.connect(lambda event: window.statusBar().showMessage(f"Running {event.name}…"))
        bridge.tool_output.connect(self.tool_output)
        bridge.tool_finished.connect(lambda _event: window.statusBar().clearMessage())

    def finished(self, result: RunResult) -> None:
        """An operation ended: refresh its session's row, say what changed, and offer the way out of a failure."""
        window = self._window
        controller = window.controller
        session = controller.session
        if session is not None:
            window.sessions.refresh_session(session.store.session_id)
        if result.kind == "compaction" and result.answer:
            window.statusBar().showMessage(result.answer, 5000)
        if result.outcome == "completed":
            self.offers.reset()
        used = controller.connection_in_use
        if used is not None and controller.settings_changed_since_start():
            window.statusBar().showMessage(
                f"That operation ran on the previous settings ({used.profile.name} · {used.model}); "
                "the next request uses the new ones.",
                10000,
            )
        if self._learned_notice is not None:
            window.statusBar().showMessage(self._learned_notice, 20000)
            self._learned_notice = None
        if result.outcome == "failed":
            action = action_for(result.error, used.profile if used is not None else None)
            if action is not None:
                self.offers.offer(action, used.profile_id if used is not None else None)
        self._update_status()
        self._update_actions()

    def dialect_learned(self, profile_id: str | None, event: DialectLearned) -> None:
        """The server needs a repaired request form: keep it in the profile (saved), and say so once."""
        window = self._window
        settings = window.services.settings
        config = settings.profile(profile_id) if profile_id is not None else None
        name = config.name if config is not None else event.base_url
        if config is not None and store_learned_dialect(settings, config, event):
            self._save_settings()
            window.controller.adopt_settings()  # the running agent already sends the repaired form
        words = learned_words(event)
        _log.info("%s: learned %s", name, event.changes)
        self._learned_notice = f"{name}: {words}."
        window.statusBar().showMessage(self._learned_notice, 20000)
        self._update_status()

    def tools_dropped(self, event: ToolsDropped) -> None:
        """The model never saw the tools: say so, with the ways out."""
        used = self._window.controller.connection_in_use
        profile_id = used.profile_id if used is not None else None
        self._window.show_banner(
            event.message + TOOLS_DROPPED_ADVICE,
            "Open provider settings",
            lambda: self._open_provider_settings(profile_id),
        )

    def retry_cancelled(self) -> None:
        """The automatic retry was cancelled: the inline Retry is still there."""
        self._window.statusBar().showMessage(
            "Automatic retry cancelled; use Retry in the transcript when you are ready.", 8000
        )
        self._update_actions()

    def copy(self, text: str) -> None:
        """Copy ``text`` (a command that starts a local server) to the clipboard, and say so."""
        QGuiApplication.clipboard().setText(text)
        self._window.statusBar().showMessage(f"Copied: {text}", 5000)

    def tool_output(self, event: object) -> None:
        """A running tool printed: show it live in the inspector, and its last line in the status bar."""
        self._window.inspector.append_live_output(str(getattr(event, "call_id", "")), str(getattr(event, "text", "")))
        lines = [line for line in str(getattr(event, "text", "")).splitlines() if line.strip()]
        if lines:
            self._window.statusBar().showMessage(f"{getattr(event, 'name', 'tool')}: {lines[-1][:200]}")

    def failed(self, message: str) -> None:
        """An operation could not be run."""
        _log.warning("operation failed: %s", message)
        self._window.show_banner(self._window.with_log_hint(message))

    def unfinished(self, message: str) -> None:
        """The open session has an unfinished operation: offer to recover it."""
        _log.info("session has an unfinished operation: %s", message)
        window = self._window
        window.show_banner(window.with_log_hint(message), "Recover", window.controller.recover)

    def recovery_blocked(self, message: str) -> None:
        """An unfinished operation cannot be recovered: offer to abort it."""
        _log.warning("recovery blocked: %s", message)
        window = self._window
        window.show_banner(window.with_log_hint(message), "Abort Unfinished Operation", window.controller.abandon)

    def retry(self, notice: NoticeItem) -> None:
        """Run the failed operation of ``notice`` again (its inline Retry)."""
        self._window.banner.cancel_countdown()
        if notice.operation_kind == "compaction":
            self._window.controller.compact()
        elif notice.retry_prompt:
            self._window.controller.submit(notice.retry_prompt)

    def retry_last(self) -> None:
        """Run the latest failed operation again (what its inline Retry does)."""
        timeline = self._window.timeline
        notices = [item for item in (timeline.items if timeline else []) if isinstance(item, NoticeItem)]
        if notices and notices[-1].retryable:
            self.retry(notices[-1])
