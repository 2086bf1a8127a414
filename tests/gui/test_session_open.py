"""Opening a session: the file is read, validated and turned into a timeline off the GUI thread; a session closed a
moment ago, or read ahead because the user pointed at it, is reused while its file is unchanged."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from PySide6.QtCore import QPoint
from pytestqt.qtbot import QtBot

from tests.core.session.builders import Call, SessionScript
from tests.gui.test_sessions_data import add_sessions
from tiny_agent_core.errors import SessionLockedError
from tiny_agent_core.ledger import SessionSummary, connect, scan_workspace
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.session import SessionStore
from tiny_agent_core.session import store as store_module
from tiny_agent_core.session.store import session_file_name
from tiny_agent_core.timeline import AssistantItem, Timeline, ToolItem, UserItem
from tiny_agent_core.tools.approval import AllowListApprover, ToolSettings
from tiny_agent_core.workbench import Workbench
from tiny_agent_gui import session_controller, session_loading
from tiny_agent_gui.session_controller import Connection, SessionController
from tiny_agent_gui.session_loading import KEPT_BYTES, KeptSessions
from tiny_agent_gui.sessions import SessionListPane
from tiny_agent_gui.sessions.pane import POINT_DELAY_MS


@pytest.fixture
async def controller() -> AsyncIterator[SessionController]:
    http = httpx.AsyncClient(trust_env=False)
    made = SessionController(
        client=ProviderClient(http),
        approver=AllowListApprover([]),
        tool_settings=ToolSettings.in_memory(),
        connection=lambda: Connection(custom_profile("http://127.0.0.1:9/v1"), "m", None),
    )
    yield made
    await made.wait_idle()
    await made.aclose()
    await http.aclose()
    made.deleteLater()
    await asyncio.sleep(0)


def _session(folder: Path, runs: int) -> Path:
    """A valid session file of ``runs`` prompt / tool call / answer runs."""
    script = SessionScript(seed=runs)
    for number in range(runs):
        script.run(f"prompt {number}", [[Call("read", '{"path":"a.txt"}', "A")], f"answer {number}"])
    return _write(folder, script.data())


def _write(folder: Path, data: bytes) -> Path:
    session_id = json.loads(data.split(b"\n", 1)[0])["id"]
    sessions = folder / ".tiny-agent" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    path = sessions / session_file_name(datetime(2026, 1, 1, tzinfo=UTC), session_id)
    path.write_bytes(data)
    return path


def _record(signal: Any) -> list[Any]:
    seen: list[Any] = []
    signal.connect(seen.append)
    return seen


async def test_the_file_is_loaded_in_a_worker_thread_and_the_timeline_comes_with_the_session(
    controller: SessionController, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path, 3)
    threads: list[threading.Thread] = []
    load = session_controller.load_session

    def spy(*args: Any) -> Any:
        threads.append(threading.current_thread())
        return load(*args)

    monkeypatch.setattr(session_controller, "load_session", spy)
    opened = _record(controller.session_opened)
    busy = _record(controller.busy_changed)
    opening = controller.open(path)
    assert opening is not None
    assert controller.busy
    assert opened == []  # nothing was read on this thread
    await opening
    assert threads
    assert threads[0] is not threading.main_thread()
    assert busy == [True, False]
    assert len(opened) == 1
    assert opened[0] is controller.session
    timeline = controller.timeline
    assert isinstance(timeline, Timeline)
    kinds = [type(item) for item in timeline.items]
    assert kinds == [UserItem, AssistantItem, ToolItem, AssistantItem] * 3
    assert controller.open(path) is None  # already open: nothing to do


async def test_the_ledger_facts_are_read_on_the_worker_thread_s_own_connection(
    controller: SessionController, tmp_path: Path
) -> None:
    path = _session(tmp_path, 2)
    ledger = connect(tmp_path / "index.sqlite3")
    scan_workspace(ledger, tmp_path)
    controller._workbench = Workbench.over(ledger)  # the window passes its index connection
    try:
        opening = controller.open(path)
        assert opening is not None
        await opening
        assert controller.timeline is not None
        assert len(controller.timeline.items) == 8
    finally:
        controller.close()
        ledger.close()


async def test_opening_another_session_while_one_loads_supersedes_it_and_releases_its_lock(
    controller: SessionController, tmp_path: Path
) -> None:
    first, second = _session(tmp_path / "one", 2), _session(tmp_path / "two", 3)
    opened = _record(controller.session_opened)
    superseded = controller.open(first)
    await asyncio.sleep(0)  # its load is under way in the worker thread
    latest = controller.open(second)
    assert superseded is not None
    assert latest is not None
    await latest
    assert superseded.cancelled()
    assert [session.store.path for session in opened] == [second]
    await asyncio.sleep(0)
    for _ in range(100):  # the superseded load finishes in its thread, then its store is closed
        try:
            SessionStore.open(first).close()
            break
        except Exception:
            await asyncio.sleep(0.05)
    else:
        pytest.fail("the superseded open kept its session locked")


async def test_a_corrupt_file_is_reported_and_nothing_stays_busy(controller: SessionController, tmp_path: Path) -> None:
    path = _session(tmp_path, 1)
    path.write_bytes(b'{"kind":"header"}\nnot json\n')
    failed = _record(controller.failed)
    busy = _record(controller.busy_changed)
    opening = controller.open(path)
    assert opening is not None
    await opening
    assert controller.session is None
    assert controller.timeline is None
    assert busy == [True, False]
    assert len(failed) == 1
    assert failed[0].startswith(f"Cannot open {path.name}:")


async def _open(controller: SessionController, path: Path) -> None:
    opening = controller.open(path)
    assert opening is not None
    await opening
    assert controller.session is not None


async def test_going_back_to_an_unchanged_session_reuses_what_was_validated_and_built(
    controller: SessionController, tmp_path: Path
) -> None:
    first, second = _session(tmp_path / "one", 3), _session(tmp_path / "two", 2)
    await _open(controller, first)
    timeline = controller.timeline
    await _open(controller, second)
    await _open(controller, first)
    assert controller.session is not None
    assert controller.session.store.resumed
    assert controller.timeline is timeline
    assert not controller.session.read_only
    with pytest.raises(SessionLockedError):  # the reopened store holds the writer lock again
        SessionStore.open(first)


async def test_a_reopened_session_takes_the_ledger_s_newer_costs_after_it_is_shown(
    controller: SessionController, tmp_path: Path
) -> None:
    first, second = _session(tmp_path, 2), _session(tmp_path / "two", 1)
    ledger = connect(tmp_path / "index.sqlite3")
    scan_workspace(ledger, tmp_path)
    controller._workbench = Workbench.over(ledger)  # the window passes its index connection
    try:
        await _open(controller, first)
        await _open(controller, second)
        with ledger:  # repriced while the session was closed
            ledger.execute("UPDATE requests SET cost = '0.25', cost_source = 'override'")
        await _open(controller, first)
        assert controller.session is not None
        assert controller.session.store.resumed
        timeline = controller.timeline
        assert timeline is not None
        for _ in range(200):  # read in a worker thread after the switch, then applied on this thread
            if all(step.cost == Decimal("0.25") for step in timeline.steps()):
                break
            await asyncio.sleep(0.01)
        assert [(step.cost, step.cost_source) for step in timeline.steps()] == [(Decimal("0.25"), "override")] * 4
    finally:
        controller.close()
        ledger.close()


async def test_a_session_that_changed_while_closed_is_read_and_validated_again(
    controller: SessionController, tmp_path: Path
) -> None:
    script = SessionScript(seed=7)
    for number in range(3):
        script.run(f"prompt {number}", [[Call("read", '{"path":"a.txt"}', "A")], f"answer {number}"])
    first = _write(tmp_path / "one", script.data())
    second = _session(tmp_path / "two", 2)
    await _open(controller, first)
    timeline = controller.timeline
    assert timeline is not None
    await _open(controller, second)
    script.run("one more", [[Call("read", '{"path":"a.txt"}', "A")], "done"])
    longer = script.data()
    assert longer.startswith(first.read_bytes())
    first.write_bytes(longer)  # another program appended a run meanwhile
    await _open(controller, first)
    assert controller.session is not None
    assert not controller.session.store.resumed
    reread = controller.timeline
    assert reread is not None
    assert reread is not timeline
    assert len(reread.items) == len(timeline.items) + 4


async def test_a_session_rewritten_while_closed_is_refused_not_shown_from_memory(
    controller: SessionController, tmp_path: Path
) -> None:
    first, second = _session(tmp_path / "one", 3), _session(tmp_path / "two", 2)
    await _open(controller, first)
    await _open(controller, second)
    data = first.read_bytes()
    first.write_bytes(data.replace(b"prompt 1", b"prompt\x00"))  # same length, no longer valid JSON
    failed = _record(controller.failed)
    opening = controller.open(first)
    assert opening is not None
    await opening
    assert len(failed) == 1
    assert failed[0].startswith(f"Cannot open {first.name}:")
    assert controller.session is None


def test_the_kept_sessions_stay_within_their_limits(tmp_path: Path) -> None:
    kept = KeptSessions()
    paths = [_session(tmp_path / str(number), 1) for number in range(6)]
    for path in paths:
        snapshot = SessionStore.open(path, resumable=True).close_keeping()
        assert snapshot is not None
        kept.keep(snapshot, Timeline(snapshot.state.header))
    assert len(kept) == 4
    assert kept.take(paths[0]) is None  # the oldest went first
    taken = kept.take(paths[-1])
    assert taken is not None
    assert taken.snapshot.path == paths[-1]
    assert kept.take(paths[-1]) is None  # a snapshot is reused at most once
    assert kept.kept_bytes() <= KEPT_BYTES


async def _warmed(controller: SessionController, path: Path) -> None:
    controller.warm(path)
    for _ in range(500):
        if not controller._background:  # the read ahead finished
            return
        await asyncio.sleep(0.01)
    pytest.fail("reading ahead did not finish")


async def test_opening_a_session_read_ahead_reuses_what_was_read(controller: SessionController, tmp_path: Path) -> None:
    path = _session(tmp_path, 3)
    await _warmed(controller, path)
    store = SessionStore.open(path)  # read ahead without the writer lock: another writer may take it meanwhile
    store.close()
    opening = controller.open(path)
    assert opening is not None
    await opening
    assert controller.session is not None
    assert controller.session.store.resumed
    assert not controller.session.read_only  # the open takes the lock, as any open does
    assert controller.timeline is not None
    assert len(controller.timeline.items) == 12
    with pytest.raises(SessionLockedError):
        SessionStore.open(path)


async def test_an_open_while_the_session_is_read_ahead_waits_for_that_read(
    controller: SessionController, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path, 2)
    reads: list[Path] = []
    warm = session_loading.warm_session

    def counted(*args: object) -> object:
        reads.append(path)
        return warm(*args)  # type: ignore[arg-type]

    monkeypatch.setattr("tiny_agent_gui.session_controller.warm_session", counted)
    controller.warm(path)
    opening = controller.open(path)  # at once: the read ahead is still running
    assert opening is not None
    await opening
    assert reads == [path]
    assert controller.session is not None
    assert controller.session.store.resumed
    assert controller.timeline is not None
    assert len(controller.timeline.items) == 8


async def test_a_session_changed_after_it_was_read_ahead_is_read_again(
    controller: SessionController, tmp_path: Path
) -> None:
    path = _session(tmp_path, 2)
    await _warmed(controller, path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b"answer 1", b"answer 9"))  # still valid, different bytes
    opening = controller.open(path)
    assert opening is not None
    await opening
    assert controller.session is not None
    assert not controller.session.store.resumed
    assert controller.timeline is not None
    last = controller.timeline.items[-1]
    assert isinstance(last, AssistantItem)
    assert last.text == "answer 9"


async def test_nothing_is_read_ahead_for_a_file_too_large_to_keep(
    controller: SessionController, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path, 2)
    monkeypatch.setattr(session_loading, "KEPT_BYTES", 100)
    await _warmed(controller, path)
    assert path not in controller._kept


async def test_a_corrupt_file_read_ahead_is_reported_only_when_opened(
    controller: SessionController, tmp_path: Path
) -> None:
    path = _session(tmp_path, 1)
    path.write_bytes(b'{"kind":"header"}\nnot json\n')
    failed: list[str] = []
    controller.failed.connect(failed.append)
    await _warmed(controller, path)
    assert failed == []
    opening = controller.open(path)
    assert opening is not None
    await opening
    assert len(failed) == 1
    assert failed[0].startswith(f"Cannot open {path.name}:")


def test_the_pane_names_the_row_the_mouse_rests_on_or_the_keyboard_moves_to(qtbot: QtBot, tmp_path: Path) -> None:
    conn = connect(tmp_path / "index.sqlite3")
    add_sessions(conn, tmp_path / "project", 5)
    pane = SessionListPane(conn)
    qtbot.addWidget(pane)
    pane.resize(360, 400)
    with qtbot.waitExposed(pane):
        pane.show()
    view = pane.list_view
    first = 0
    with qtbot.waitSignal(pane.session_pointed, timeout=POINT_DELAY_MS * 20) as pointed:
        view.setCurrentIndex(pane.model.index(first))
    assert isinstance(pointed.args[0], SessionSummary)
    assert pointed.args[0] == pane.model.summary(first)
    second = first + 1
    rect = view.visualRect(pane.model.index(second))
    with qtbot.waitSignal(pane.session_pointed, timeout=POINT_DELAY_MS * 20) as pointed:
        view.entered.emit(view.indexAt(QPoint(rect.center())))  # what mouse tracking emits as the mouse rests there
    assert pointed.args[0] == pane.model.summary(second)
    conn.close()


def test_a_session_a_command_line_is_writing_opens_read_only_and_heard_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = SessionScript(seed=5)
    script.run("prompt", ["answer"])
    path = _write(tmp_path / "ws", script.data() + b'[{"kind":"entry","seq":')  # a CLI's line, half written
    reduce = store_module._reduce

    def reduce_while_the_cli_writes(*args: Any) -> Any:
        with path.open("ab") as writer:
            writer.write(b"9")
        return reduce(*args)

    monkeypatch.setattr(store_module, "_reduce", reduce_while_the_cli_writes)
    loaded = session_loading.load_session(path, None, None)
    try:
        assert loaded.session.read_only
        assert "grew while it was being opened" in (loaded.session.read_only_reason or "")
        assert [type(item) for item in loaded.timeline.items] == [UserItem, AssistantItem]  # each heard once
    finally:
        loaded.session.store.close()
