"""The compare view: a finished comparison is listed under "Earlier comparisons" and reopens in a new view (as
after a restart); "Discard Copies" removes the copies and the comparison still shows its diffs and sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
from pytestqt.qtbot import QtBot

from tests.gui.waiting import until
from tests.loopback import LoopbackServer, Reply
from tests.scripted_models import ScriptedModels, answer, tool_call
from tiny_agent_core.compare import CompareRun, Contender
from tiny_agent_core.model_catalog import ModelEntry
from tiny_agent_core.pricing import Rates
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_gui.compare_view import CompareView


def _edit(call_id: str, new: str) -> Reply:
    return tool_call(call_id, "edit", {"path": "greet.py", "edits": [{"oldText": "hi", "newText": new}]})


@pytest.fixture
async def client() -> AsyncIterator[ProviderClient]:
    http = httpx.AsyncClient(trust_env=False)
    async with ProviderClient(http) as made:
        yield made
    await http.aclose()


def _rows(view: CompareView) -> list[list[str]]:
    table = view.table_model
    return [[table.index(r, c).data() for c in range(table.columnCount())] for r in range(table.rowCount())]


async def test_a_saved_comparison_lists_reopens_and_its_copies_can_be_discarded(
    tmp_path: Path, qtbot: QtBot, client: ProviderClient
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greet.py").write_text("print('hi')\n")
    folder = tmp_path / "compare"
    with LoopbackServer() as server:
        server.handler = ScriptedModels(
            {
                "model-a": [_edit("a1", "hello"), answer("hello it is")],
                "model-b": [_edit("b1", "hey"), answer("hey it is")],
            }
        )
        profile = custom_profile(server.base_url, name="Loop")

        def start(prompt: str, entries: list[ModelEntry], allowed: list[str], on_change: Callable[[int], None]):  # type: ignore[no-untyped-def]
            contenders = [Contender(profile, entry.model) for entry in entries]
            return CompareRun(
                workspace, prompt, contenders, folder=folder, client=client, allowed=allowed, on_change=on_change
            )

        first = CompareView(start, folder=folder)
        qtbot.addWidget(first)
        first.show()
        await until(lambda: first.reopen_button.isEnabled() is False and first.saved.count() == 0)
        for model in ("model-a", "model-b"):
            first.add_model(ModelEntry("loop", "Loop", model, Rates("local")))
        first.prompt.setPlainText("greet better")
        first.tool_boxes["bash"].setChecked(True)
        first.start_button.click()
        await first.wait()
        await until(lambda: first.saved.count() == 1)
    live = _rows(first)

    def entry_for(contender: Contender) -> ModelEntry | None:  # model-b's provider is no longer configured
        return ModelEntry("loop", "Loop", contender.model, Rates("local")) if contender.model == "model-a" else None

    again = CompareView(start, folder=folder, entry_for=entry_for)  # a new view, as after a restart
    qtbot.addWidget(again)
    again.show()
    await until(lambda: again.saved.count() == 1)
    assert "greet better · 2/2 completed" in again.saved.itemText(0)
    assert again.table_model.rowCount() == 0
    assert again.reopen_button.isEnabled()
    again.reopen_button.click()
    await until(lambda: again.table_model.rowCount() == 2)
    assert _rows(again) == live
    assert [row[1] for row in _rows(again)] == ["completed", "completed"]
    assert again.prompt.toPlainText() == "greet better"
    assert "its copies are still there" in again.status.text()
    assert [again.models.item(row).text() for row in range(again.models.count())] == [
        "Loop · model-a — local — no API charge"
    ]  # ready to run again once another model is added
    assert "1 of its models cannot be run again here" in again.status.text()
    allowed = sorted(name for name, box in again.tool_boxes.items() if box.isChecked())
    assert allowed == ["bash", "edit", "read", "write"]
    again.table.setCurrentIndex(again.table_model.index(1, 0))
    assert "+print('hey')" in again.diff.toPlainText()
    assert again.keep_button.isEnabled()
    assert again.discard_button.isEnabled()

    comparison = again.comparison
    assert comparison is not None
    copies = [report.copy.path for report in comparison.reports if report.copy is not None]
    assert len(copies) == 2
    again.discard_button.click()
    await until(lambda: not again.busy and not again.discard_button.isEnabled())
    assert not any(path.exists() for path in copies)
    assert "Removed the copies" in again.status.text()
    assert (workspace / "greet.py").read_text() == "print('hi')\n"
    assert "its copy was removed" in again.diff.toPlainText()
    assert "+print('hey')" in again.diff.toPlainText()
    assert not again.keep_button.isEnabled()
    await until(lambda: "copies removed" in again.saved.itemText(0))

    opened: list[Path] = []
    again.session_requested.connect(opened.append)
    again.open_button.click()
    assert len(opened) == 1
    assert opened[0].is_file()
    assert opened[0].is_relative_to(folder)
