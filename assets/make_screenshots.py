"""Render the README screenshots from a scripted demo session (no network: a loopback provider replays replies).

    QT_QPA_PLATFORM=offscreen .venv/bin/python assets/make_screenshots.py   # or under xvfb-run

Writes ``assets/screenshot-main.png`` (transcript with a tool call selected in the inspector),
``assets/screenshot-costs.png`` (the cost view), ``assets/screenshot-approval.png`` (an edit waiting for approval),
``assets/screenshot-settings.png`` and ``assets/screenshot-welcome.png`` (first run).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import httpx  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.loopback import LoopbackServer, Reply, sse_events  # noqa: E402
from tiny_agent_core.ledger import connect, scan_workspace  # noqa: E402
from tiny_agent_core.providers.client import ProviderClient  # noqa: E402
from tiny_agent_core.secrets import KeyStore  # noqa: E402
from tiny_agent_core.settings import AppSettings, ProfileConfig  # noqa: E402
from tiny_agent_core.timeline import ToolItem  # noqa: E402
from tiny_agent_core.tools.approval import AllowListApprover, ApprovalPolicy, ToolSettings  # noqa: E402
from tiny_agent_core.tools.registry import builtin_tools  # noqa: E402
from tiny_agent_gui.approval_dialog import ApprovalDialog  # noqa: E402
from tiny_agent_gui.event_loop import HookedQEventLoop  # noqa: E402
from tiny_agent_gui.main_window import MainWindow, Services  # noqa: E402
from tiny_agent_gui.settings import ProviderCalls, SettingsDialog  # noqa: E402

OUT = ROOT / "assets"


def _usage(prompt: int, completion: int, cached: int, cost: float) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "cost": cost,
    }


def _tool_turn(call_id: str, name: str, arguments: dict[str, Any], usage: dict[str, Any], text: str) -> Reply:
    head = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    rest = {"index": 0, "function": {"arguments": json.dumps(arguments)}}
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [head]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [rest]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": usage},
    ]
    return Reply.sse(sse_events(chunks))


def _answer(text: str, usage: dict[str, Any]) -> Reply:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage},
    ]
    return Reply.sse(sse_events(chunks))


async def _demo(app: QApplication) -> None:
    with tempfile.TemporaryDirectory() as root, LoopbackServer() as server:
        base = Path(root)
        os.environ["TINY_AGENT_DATA_DIR"] = str(base / "data")
        workspace = base / "demo-project"
        workspace.mkdir()
        (workspace / "greet.py").write_text('def greet(name):\n    return "Hello " + name\n')
        settings = AppSettings()
        profile = replace(ProfileConfig.from_preset("openrouter", "openrouter"), base_url=server.base_url)
        settings.add_profile(replace(profile, model="anthropic/claude-sonnet-4.5"))
        settings.active_profile = "openrouter"
        settings.add_workspace(workspace)
        http = httpx.AsyncClient(trust_env=False)
        client = ProviderClient(http)
        ledger = connect(base / "index.sqlite3")
        services = Services(client, ledger, settings, KeyStore(environ={}), ToolSettings.in_memory())
        window = MainWindow(services)
        window.controller._approver = AllowListApprover(["read", "edit", "bash"])  # the demo approves for you
        window.resize(1440, 900)
        window.show()

        server.queue(
            _tool_turn("call_1", "read", {"path": "greet.py"}, _usage(1840, 41, 0, 0.00615), "Let me look at it."),
            _tool_turn(
                "call_2",
                "edit",
                {"path": "greet.py", "edits": [{"oldText": '"Hello " + name', "newText": 'f"Hello, {name}!"'}]},
                _usage(1932, 88, 1792, 0.00233),
                "",
            ),
            _answer(
                "Done. `greet` now uses an f-string:\n\n```python\ndef greet(name):\n"
                '    return f"Hello, {name}!"\n```\n\nThe greeting also gained a comma and an exclamation mark.',
                _usage(2051, 63, 1920, 0.00190),
            ),
        )
        window.new_session()
        window.controller.submit("Make greet() use an f-string and a friendlier greeting.")
        await window.controller.wait_idle()
        server.queue(_answer("Ja, alles gut! 你好，世界。", _usage(2200, 12, 2048, 0.0011)))
        window.controller.submit("Alles gut? 你好吗？")
        await window.controller.wait_idle()

        for number, (model, cost) in enumerate([("openai/gpt-5", 0.0421), ("deepseek/deepseek-chat", 0.0009)]):
            settings.update_profile(replace(settings.profiles[0], model=model))
            server.queue(_answer(f"Answer {number}", _usage(900 + number * 300, 120, 512, cost)))
            window.new_session()
            window.controller.submit(f"Summarize the project ({model})")
            await window.controller.wait_idle()
        scan_workspace(ledger, workspace)
        window.sessions.reload()

        first = window.sessions.model.index(window.sessions.model.rowCount() - 1, 0)
        window.sessions.list_view.setCurrentIndex(first)
        window.sessions.session_activated.emit(window.sessions.model.data(first, window.sessions.model.SessionRole))
        await asyncio.sleep(0.3)
        timeline = window.timeline
        assert timeline is not None
        edit = next(i for i, item in enumerate(timeline.items) if isinstance(item, ToolItem) and item.name == "edit")
        window.transcript.setCurrentIndex(window.transcript.transcript_model().index(edit, 0))
        await asyncio.sleep(0.5)
        app.processEvents()
        window.grab().save(str(OUT / "screenshot-main.png"))

        window.show_costs()
        window.cost_view.table.selectAll() if hasattr(window.cost_view, "table") else None
        await asyncio.sleep(0.5)
        app.processEvents()
        window.grab().save(str(OUT / "screenshot-costs.png"))
        window.controller.close()

        tool = next(t for t in builtin_tools(workspace) if t.name == "edit")
        arguments = {"path": "greet.py", "edits": [{"oldText": 'f"Hello, {name}!"', "newText": 'f"Hi, {name}!"'}]}
        approval = ApprovalDialog(
            await ApprovalPolicy(ToolSettings.in_memory()).request_for(tool, arguments, call_id="call_9"), window
        )
        approval.resize(760, 560)
        approval.show()
        await asyncio.sleep(0.3)
        app.processEvents()
        approval.grab().save(str(OUT / "screenshot-approval.png"))
        approval.close()

        settings.update_profile(replace(settings.profiles[0], base_url=None))  # show the preset's real URL
        dialog = SettingsDialog(
            settings, ToolSettings.in_memory(), KeyStore(environ={}), ProviderCalls.over_http(http), window
        )
        dialog.resize(900, 620)
        dialog.show()
        await asyncio.sleep(0.3)
        app.processEvents()
        dialog.grab().save(str(OUT / "screenshot-settings.png"))
        dialog.close()

        fresh = MainWindow(replace(services, settings=AppSettings()))
        fresh.resize(1100, 700)
        fresh.show()
        await asyncio.sleep(0.4)
        app.processEvents()
        fresh.grab().save(str(OUT / "screenshot-welcome.png"))
        fresh.close()
        window.close()
        ledger.close()
        await http.aclose()


def main() -> None:
    """Render the screenshots."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    loop = HookedQEventLoop(app)
    asyncio.set_event_loop(loop)
    loop.run_until_complete(_demo(app))
    print("wrote", ", ".join(sorted(p.name for p in OUT.glob("screenshot-*.png"))))


if __name__ == "__main__":
    main()
