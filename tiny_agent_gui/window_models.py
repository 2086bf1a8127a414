"""How the main window chooses models: the model picker (Ctrl+M, one at a time), the model of the next request, and
"Re-run on…" a prompt on another model.

A chosen model becomes the active profile's model (saved in the settings). An unfinished operation of the open
session started on another model cannot be recovered on the chosen one (the core's recovery planner refuses a
changed configuration, see :func:`~tiny_agent_core.model_catalog.recovery_conflict`): the banner says so, with the
two ways forward. A re-run forks the session before the prompt (:func:`~tiny_agent_core.fork.fork_before`, in a
worker thread) and runs the prompt in the fork; it waits for no running operation (the user stops it first).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import shiboken6
from PySide6.QtCore import Qt

from tiny_agent_core.errors import TinyAgentError
from tiny_agent_core.fork import fork_before
from tiny_agent_core.model_catalog import ModelEntry, recovery_conflict
from tiny_agent_core.settings import AppSettings
from tiny_agent_core.timeline import UserItem
from tiny_agent_gui.banner import Action
from tiny_agent_gui.model_picker import ModelPicker
from tiny_agent_gui.window_settings import make_active

if TYPE_CHECKING:
    from tiny_agent_gui.main_window import MainWindow


def current_model(settings: AppSettings) -> tuple[str, str] | None:
    """``(profile id, model)`` of the next request, or ``None`` when no provider and model are configured."""
    config = settings.active()
    return (config.id, config.model) if config is not None and config.model else None


class ModelChoice:
    """The window's model picker and what a pick does: the next request's model, or a re-run of a prompt.

    ``save_settings`` saves the settings (with a banner if they cannot be); ``model_changed`` tells the window the
    active model changed (its context window and status bar follow).
    """

    def __init__(
        self, window: MainWindow, *, save_settings: Callable[[], None], model_changed: Callable[[], None]
    ) -> None:
        self._window = window
        self._save_settings = save_settings
        self._model_changed = model_changed
        self.picker: ModelPicker | None = None
        """The open model picker (``None`` before the first; it deletes itself when closed)."""
        self._tasks: set[asyncio.Future[None]] = set()

    def open_picker(self, title: str, chosen: Callable[[ModelEntry], None]) -> ModelPicker:
        """Open the model picker (one at a time) on the current model; ``chosen`` gets the pick."""
        if self.picker is not None and shiboken6.isValid(self.picker):
            self.picker.close()
        window = self._window
        picker = ModelPicker(window.catalog, current_model(window.services.settings), title, window)
        picker.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        picker.chosen.connect(chosen)
        self.picker = picker
        picker.open()
        picker.filter.setFocus()
        return picker

    def choose(self) -> None:
        """Ctrl+M: pick the provider and model of the next request."""
        self.open_picker("Choose Model", self.use)

    def apply(self, entry: ModelEntry) -> bool:
        """Make ``entry`` the active profile and its model (saved in the settings); ``False`` if it is gone."""
        if not make_active(self._window.services.settings, entry):
            return False
        self._save_settings()
        self._model_changed()
        return True

    def use(self, entry: ModelEntry) -> None:
        """Use ``entry`` for the next request of the session (and new sessions). An unfinished operation of the
        open session started on another model cannot be recovered on this one (the recovery planner refuses a
        changed configuration): say so, with the two ways forward."""
        window = self._window
        previous = current_model(window.services.settings)
        if not self.apply(entry):
            return
        session = window.controller.session
        recorded = recovery_conflict(session.store.state, entry.model) if session is not None else None
        if recorded is not None and session is not None and not session.read_only:
            back = window.catalog.entry_for(previous[0], recorded) if previous is not None else None
            revert: Action | None = (f"Switch back to {recorded}", lambda: self.use(back)) if back else None
            window.show_banner(
                f"This session has an unfinished operation started on {recorded}. Recovering it needs the same "
                f"configuration, so it cannot continue on {entry.model}: switch back to {recorded} and Recover it, "
                f"or abort it; then the next request uses {entry.model}.",
                "Abort Unfinished Operation",
                window.controller.abandon,
                more=revert,
            )
        elif window.controller.busy:
            window.statusBar().showMessage(
                f"The running operation finishes on its model; the next request uses {entry.label}.", 10000
            )
        else:
            window.statusBar().showMessage(f"The next request uses {entry.label}.", 5000)

    def rerun(self, item: UserItem) -> None:
        """ "Re-run on…" a prompt: pick a model, fork the session before that prompt and run it there."""
        window = self._window
        session = window.controller.session
        if session is None:
            return
        if window.controller.busy:
            window.show_banner("Stop the running operation before re-running a prompt.")
            return
        origin = session.store.path
        self.open_picker("Re-run on…", lambda entry: self._spawn(self._rerun(origin, item, entry)))

    async def _rerun(self, origin: Path, item: UserItem, entry: ModelEntry) -> None:
        window = self._window
        config = window.services.settings.profile(entry.profile_id)
        if config is None or window.controller.busy:
            return
        try:
            provider = config.provider_profile().id
            store, prompt = await asyncio.to_thread(
                fork_before, origin, item.entry_id, model=entry.model, provider=provider
            )
        except (TinyAgentError, OSError) as error:
            window.show_banner(window.with_log_hint(f"The prompt could not be re-run: {error}"))
            return
        store.close()
        self.apply(entry)
        opening = window.controller.open(store.path)
        if opening is not None:
            await opening
        if window.controller.session is not None and window.controller.session.store.path == store.path:
            window.controller.submit(prompt)
            window.statusBar().showMessage(f"Re-running the prompt on {entry.label} in a new session.", 8000)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
