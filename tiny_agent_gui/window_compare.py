"""How the main window hosts the compare view (Ctrl+3), and what it hands the view: a compare run, with its
contenders (one per chosen model).

The view is made the first time it is needed (the compare machinery is imported then). A new compare starts with
the composer's text and the current model; its runs work in copies of the open session's workspace (else the
window's current one). A contender needs its model's provider profile and key; a provider removed from the settings
since it was picked, or a key that cannot be read, is a typed error whose message says what to do (the window
shows it in the banner).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tiny_agent_core.agent.loop import DEFAULT_MAX_STEPS
from tiny_agent_core.errors import SecretStoreError, SettingsError
from tiny_agent_core.model_catalog import ModelEntry, entries_for
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.settings import AppSettings
from tiny_agent_gui.window_connection import KeyCache
from tiny_agent_gui.window_models import ModelChoice, current_model

if TYPE_CHECKING:  # the compare machinery is imported when the compare view is first shown
    from tiny_agent_core.compare import CompareRun, Contender
    from tiny_agent_gui.compare_view import CompareView
    from tiny_agent_gui.main_window import MainWindow


def contenders_for(entries: list[ModelEntry], settings: AppSettings, keys: KeyCache) -> list[Contender]:
    """One contender per entry; raises :class:`SettingsError` (provider gone) or ``SecretStoreError`` (key)."""
    from tiny_agent_core.compare import Contender

    contenders = []
    for entry in entries:
        config = settings.profile(entry.profile_id)
        if config is None:
            raise SettingsError(f"The provider of {entry.label} is no longer configured.")
        contenders.append(Contender(config.provider_profile(), entry.model, keys.key_for(config)))
    return contenders


@dataclass(frozen=True)
class CompareSetup:
    """What every compare run of the window shares: its settings, keys, provider client and ledger."""

    settings: AppSettings
    keys: KeyCache
    """The window's keys (read ahead: the active profile's is usually known already)."""
    client: ProviderClient
    ledger: sqlite3.Connection


def compare_run(
    setup: CompareSetup,
    workspace: Path,
    prompt: str,
    entries: list[ModelEntry],
    allowed: list[str],
    on_change: Callable[[int], None],
) -> CompareRun:
    """A compare run of ``prompt`` on ``entries`` in copies of ``workspace`` (made if missing), kept in the data
    folder; raises like :func:`contenders_for`."""
    from tiny_agent_core.compare import CompareRun
    from tiny_agent_core.paths import comparisons_folder

    contenders = contenders_for(entries, setup.settings, setup.keys)
    workspace.mkdir(parents=True, exist_ok=True)
    return CompareRun(
        workspace,
        prompt,
        contenders,
        folder=comparisons_folder(),
        client=setup.client,
        allowed=allowed,  # the view's checkboxes are the whole policy: standing permissions do not apply
        ledger=setup.ledger,
        price_overrides=setup.settings.price_overrides or None,
        max_steps=setup.settings.max_steps or DEFAULT_MAX_STEPS,
        on_change=on_change,
    )


class CompareHost:
    """The window's compare view: made (and added to the window's pages) the first time it is needed, shown on
    Ctrl+3, its runs set up from the window's settings, keys, client and ledger.

    ``models`` opens the model picker for "Add a model"; ``running_changed`` tells the window a compare run started
    or ended (its actions follow).
    """

    def __init__(self, window: MainWindow, models: ModelChoice, *, running_changed: Callable[[], None]) -> None:
        self._window = window
        self._models = models
        self._running_changed = running_changed
        self.made: CompareView | None = None
        """The compare view once it has been made (``None`` before it is first needed)."""

    @property
    def view(self) -> CompareView:
        """The compare view, made and added to the window's pages the first time it is needed."""
        if self.made is None:
            from tiny_agent_gui.compare_view import CompareView

            view = CompareView(self._start, entry_for=self._entry_for)
            view.add_model_requested.connect(self._add_model)
            view.model_added.connect(self._read_key_ahead)
            view.session_requested.connect(self._open_session)
            view.running_changed.connect(lambda _running: self._running_changed())
            self._window.pages.addWidget(view)
            self.made = view
        return self.made

    @property
    def running(self) -> bool:
        """A compare run is in flight."""
        return self.made is not None and self.made.running

    def show(self) -> None:
        """Show the compare view; a new compare starts with the composer's text and the current model."""
        window = self._window
        view = self.view
        if not view.running and view.run is None and not view.prompt.toPlainText():
            view.prompt.setPlainText(window.composer.text())
            current = current_model(window.services.settings)
            entry = window.catalog.entry_for(*current) if current is not None else None
            if entry is not None:
                view.add_model(entry)
        window.pages.setCurrentWidget(view)
        view.prompt.setFocus()

    def _entry_for(self, contender: Contender) -> ModelEntry | None:
        """The model-list row of a reopened comparison's model: that model of the configured provider with the
        saved name and base URL (the run recorded those, not the settings' profile id), if there still is one,
        whether or not the catalog has fetched that provider's model list since the window started."""
        window = self._window
        settings = window.services.settings
        for config in settings.profiles:
            try:
                profile = config.provider_profile()
            except SettingsError:
                continue
            if (profile.name, profile.base_url) == (contender.profile.name, contender.profile.base_url):
                listed = window.catalog.entry_for(config.id, contender.model)  # with the context window it knows
                if listed is not None:
                    return listed
                made = entries_for(config, [contender.model], settings.price_overrides or None)
                return next(entry for entry in made if entry.model == contender.model)
        return None

    def _read_key_ahead(self, entry: ModelEntry) -> None:
        """Read the key of a model's provider ahead, so that starting the compare finds it read (the keyring may
        take a while, or ask the user to unlock it, and the GUI thread must not wait for it)."""
        config = self._window.services.settings.profile(entry.profile_id)
        if config is not None:
            self._window.background.read_key_ahead(config)

    def _add_model(self) -> None:
        self._models.open_picker("Add a Model to Compare", self.view.add_model)

    def _open_session(self, path: Path) -> None:
        controller = self._window.controller

        def show(_opening: object = None) -> None:
            if controller.session is not None and controller.session.store.path == path:
                self._window.show_sessions()

        opening = controller.open(path)
        if opening is None:
            show()
        else:
            opening.add_done_callback(show)

    def _start(
        self, prompt: str, entries: list[ModelEntry], allowed: list[str], on_change: Callable[[int], None]
    ) -> CompareRun | None:
        """A compare run of ``prompt`` on ``entries`` in copies of the open session's workspace (else the current
        one), in the data folder; ``None`` (and a banner) when a model's provider cannot be used."""
        window = self._window
        services = window.services
        setup = CompareSetup(services.settings, window.keys, services.client, services.ledger)
        try:
            return compare_run(setup, window.session_workspace(), prompt, entries, allowed, on_change)
        except (SettingsError, SecretStoreError) as error:
            window.show_banner(str(error))
            return None
