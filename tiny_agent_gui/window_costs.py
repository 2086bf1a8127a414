"""How the main window points the cost view at one session: over all time, with that session's row selected
once the view has loaded (its figures then show side by side)."""

from __future__ import annotations

from tiny_agent_gui.cost.view import CostView


def select_session_when_loaded(view: CostView, session_id: str) -> None:
    """Select (and scroll to) ``session_id``'s row the next time ``view`` has loaded, over all time."""

    def select() -> None:
        view.loaded.disconnect(select)
        rows = view.sessions_model.rows()
        number = next((n for n, row in enumerate(rows) if row.key == session_id), None)
        if number is not None:
            view.table.selectRow(number)
            view.table.scrollTo(view.sessions_model.index(number, 0))

    view.loaded.connect(select)
    view.range_combo.setCurrentText("All time")
