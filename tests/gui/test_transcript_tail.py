"""A long session opens tail first: the newest rows are laid out and painted, then every older row is revealed.

The thresholds are lowered here (``LONG_TIMELINE``, ``TAIL_ROWS``) so a few dozen runs stand for thousands.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex, QPoint
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from tests.gui.test_transcript_support import Session
from tiny_agent_core.session import facts
from tiny_agent_gui.transcript import ITEM_ROLE, TranscriptModel, TranscriptView
from tiny_agent_gui.transcript import model as model_module

TAIL = 12


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Session]:
    monkeypatch.setattr(model_module, "LONG_TIMELINE", 40)
    monkeypatch.setattr(model_module, "TAIL_ROWS", TAIL)
    made = Session(tmp_path)
    for turn in range(15):  # 15 runs of 4 rows: longer than LONG_TIMELINE
        made.full_run(f"question {turn}", "a.txt", "A", f"answer {turn}\n\n" + "line\n" * (turn % 4))
    yield made
    made.store.close()


def _items(model: TranscriptModel) -> list[object]:
    return [model.data(model.index(row), ITEM_ROLE) for row in range(model.rowCount())]


def test_a_long_timeline_shows_its_tail_then_every_row(qtmodeltester: ModelTester, session: Session) -> None:
    timeline = session.timeline
    model = TranscriptModel(timeline)
    qtmodeltester.check(model)
    assert model.rowCount() == TAIL
    assert model.hidden_rows() == len(timeline) - TAIL
    assert _items(model) == list(timeline.items[-TAIL:])
    inserted: list[tuple[int, int]] = []
    model.rowsInserted.connect(lambda _parent, first, last: inserted.append((first, last)))
    session.run("one more")  # appended while the older rows are hidden: the row after the tail
    assert model.rowCount() == TAIL + 1
    assert _items(model)[-1] is timeline.items[-1]
    model.reveal_all()
    assert inserted[-1] == (0, len(timeline) - TAIL - 2)
    assert model.hidden_rows() == 0
    assert _items(model) == list(timeline.items)
    model.reveal_all()  # nothing left: no change
    assert model.rowCount() == len(timeline)


def test_a_hidden_item_that_changes_is_read_when_it_is_shown(session: Session) -> None:
    timeline = session.timeline
    model = TranscriptModel(timeline)
    changed: list[int] = []
    model.dataChanged.connect(lambda top, _bottom: changed.append(top.row()))
    model.on_changed(0)  # the oldest item: not shown yet
    model.on_changed(len(timeline) - 1)  # the newest: the tail's last row
    assert changed == [TAIL - 1]


def test_row_of_maps_a_timeline_index_and_shows_every_row(session: Session) -> None:
    model = TranscriptModel(session.timeline)
    assert model.row_of(3) == 3
    assert model.hidden_rows() == 0
    assert model.data(model.index(3), ITEM_ROLE) is session.timeline.items[3]


def test_the_view_paints_the_tail_at_the_newest_message_then_reveals_the_rest_there(
    qtbot: QtBot, session: Session
) -> None:
    view = TranscriptView(TranscriptModel(session.timeline))
    qtbot.addWidget(view)
    view.resize(640, 400)
    model = view.transcript_model()
    rows_at_first_paint: list[int] = []
    original = view.paintEvent

    def paint(event: object) -> None:
        if not rows_at_first_paint:
            rows_at_first_paint.append(model.rowCount())
        original(event)  # type: ignore[arg-type]

    view.paintEvent = paint  # type: ignore[method-assign]
    view.show()
    qtbot.waitExposed(view)
    qtbot.waitUntil(lambda: model.hidden_rows() == 0 and view.viewport().updatesEnabled(), timeout=10_000)
    assert rows_at_first_paint == [TAIL]
    assert model.rowCount() == len(session.timeline)
    last = model.index(model.rowCount() - 1)
    qtbot.waitUntil(lambda: view.viewport().rect().intersects(view.visualRect(last)), timeout=10_000)


def test_a_row_the_user_scrolled_to_in_the_tail_stays_in_place_when_the_rest_appears(
    qtbot: QtBot, session: Session
) -> None:
    model = TranscriptModel()
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(640, 300)
    view.show()
    qtbot.waitExposed(view)
    view._reveal_timer.timeout.disconnect(view._reveal)  # hold the reveal until the user has scrolled
    model.set_timeline(session.timeline)
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=10_000)
    bar.setValue(bar.maximum() // 3)  # the user scrolls up inside the tail
    top = view.indexAt(QPoint(0, 0))
    assert top.isValid()
    item = top.data(ITEM_ROLE)
    view._reveal_timer.timeout.connect(view._reveal)
    view._reveal_timer.start(0)
    qtbot.waitUntil(lambda: model.hidden_rows() == 0 and view.viewport().updatesEnabled(), timeout=10_000)
    assert view.indexAt(QPoint(0, 0)).data(ITEM_ROLE) is item


def test_another_timeline_while_revealing_ends_the_reveal(qtbot: QtBot, session: Session, tmp_path: Path) -> None:
    view = TranscriptView(TranscriptModel(session.timeline))
    qtbot.addWidget(view)
    view.show()
    qtbot.waitExposed(view)
    small = Session(tmp_path / "small")
    try:
        small.run("hello")
        step = facts.new_id()
        small.answer(step, small.attempt(step), "hi")
        view.transcript_model().set_timeline(small.timeline)  # before, during or after the reveal
        assert view.transcript_model().hidden_rows() == 0
        qtbot.waitUntil(view.viewport().updatesEnabled, timeout=10_000)
        assert view.model().rowCount(QModelIndex()) == len(small.timeline)
    finally:
        small.store.close()
