"""Render the README screenshots from a scripted demo session (no network: a loopback provider replays replies).

    QT_QPA_PLATFORM=offscreen .venv/bin/python assets/make_screenshots.py [compare]   # or under xvfb-run

Writes ``assets/screenshot-main.png`` (a tool-heavy run: outcome cards with the edit's diff expanded, the session's
waterfall in the inspector), ``assets/screenshot-inspector.png`` (the failed ``bash`` call inspected),
``assets/screenshot-dark.png`` (the same window at 1024×640 in a dark palette), ``assets/screenshot-costs.png``
(the cost view), ``assets/screenshot-approval.png`` (an edit waiting for approval),
``assets/screenshot-settings.png``, ``assets/screenshot-mcp.png`` (Settings › MCP),
``assets/screenshot-welcome.png`` (first run) and
``assets/screenshot-compare.png`` (a finished 3-model compare at 1024×640 in the dark palette, the first run's diff
shown). ``compare`` renders only that one.
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
from PySide6.QtGui import QColor, QPalette  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.loopback import LoopbackServer, Reply, sse_events  # noqa: E402
from tests.scripted_models import ScriptedModels, answer, tool_call  # noqa: E402
from tiny_agent_core.ledger import connect, scan_workspace  # noqa: E402
from tiny_agent_core.model_catalog import ModelEntry  # noqa: E402
from tiny_agent_core.pricing import rates_in_use  # noqa: E402
from tiny_agent_core.providers.client import ProviderClient  # noqa: E402
from tiny_agent_core.secrets import KeyStore  # noqa: E402
from tiny_agent_core.settings import AppSettings, ProfileConfig  # noqa: E402
from tiny_agent_core.timeline import ToolItem  # noqa: E402
from tiny_agent_core.tools.approval import (  # noqa: E402
    ApprovalAnswer,
    ApprovalPolicy,
    ApprovalRequest,
    Choice,
    ToolSettings,
)
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
    return Reply.sse(sse_events(chunks), pace=0.12)  # paced: the waterfall shows time to first token


class _DemoApprover:
    """Approves the demo's calls for you, except a force push, which it denies as a user would."""

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        if "--force" in str(request.arguments.get("command", "")):
            return ApprovalAnswer.deny("Tests fail: do not push, and never force-push main.")
        return ApprovalAnswer(Choice.ALLOW_ONCE)


def _dark_palette() -> QPalette:
    palette = QPalette()
    for role, colour in (
        (QPalette.ColorRole.Window, "#2b2b2b"),
        (QPalette.ColorRole.WindowText, "#e6e6e6"),
        (QPalette.ColorRole.Base, "#1e1e1e"),
        (QPalette.ColorRole.AlternateBase, "#2f2f2f"),
        (QPalette.ColorRole.Text, "#e6e6e6"),
        (QPalette.ColorRole.Button, "#353535"),
        (QPalette.ColorRole.ButtonText, "#e6e6e6"),
        (QPalette.ColorRole.Highlight, "#2f65ca"),
        (QPalette.ColorRole.HighlightedText, "#ffffff"),
        (QPalette.ColorRole.PlaceholderText, "#9a9a9a"),
        (QPalette.ColorRole.Mid, "#555555"),
        (QPalette.ColorRole.ToolTipBase, "#2b2b2b"),
        (QPalette.ColorRole.ToolTipText, "#e6e6e6"),
    ):
        palette.setColor(role, QColor(colour))
    return palette


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
        catalog = base / "mcp-servers.json"
        catalog.write_text(json.dumps(_MCP_CATALOG), encoding="utf-8")
        (workspace / "greet.py").write_text('def greet(name):\n    return "Hello " + name\n')
        (workspace / "test_greet.py").write_text(
            "import unittest\n\nfrom greet import greet\n\n\nclass GreetTest(unittest.TestCase):\n"
            "    def test_greet(self):\n        self.assertEqual(greet('Ada'), 'Hello Ada')\n"
        )
        settings = AppSettings()
        profile = replace(ProfileConfig.from_preset("openrouter", "openrouter"), base_url=server.base_url)
        settings.add_profile(replace(profile, model="anthropic/claude-sonnet-4.5"))
        settings.active_profile = "openrouter"
        settings.add_workspace(workspace)
        http = httpx.AsyncClient(trust_env=False)
        client = ProviderClient(http)
        ledger = connect(base / "index.sqlite3")
        services = Services(client, ledger, settings, KeyStore(environ={}), ToolSettings.in_memory(), ask_context=False)
        window = MainWindow(services)
        window.controller._approver = _DemoApprover()  # the demo approves for you (and denies a force push)
        window.resize(1440, 900)
        window.show()

        edit = {"path": "greet.py", "edits": [{"oldText": '"Hello " + name', "newText": 'f"Hello, {name}!"'}]}
        server.queue(
            _tool_turn("call_1", "read", {"path": "greet.py"}, _usage(1840, 41, 0, 0.00615), "Let me look at it."),
            _tool_turn("call_2", "read", {"path": "tests/test_cart.py"}, _usage(1890, 30, 1792, 0.00121), ""),
            _tool_turn("call_3", "edit", edit, _usage(1932, 88, 1792, 0.00233), ""),
            _tool_turn(
                "call_4", "bash", {"command": "python3 -m unittest -q test_greet"}, _usage(2010, 35, 1920, 0.0014), ""
            ),
            _tool_turn(
                "call_5",
                "bash",
                {"command": "rm -rf build/ && git push --force origin main"},
                _usage(2290, 52, 1920, 0.0019),
                "The greeting test still expects the old text.",
            ),
            _answer(
                "`greet` now uses an f-string:\n\n```python\ndef greet(name):\n"
                '    return f"Hello, {name}!"\n```\n\n`test_greet` still expects `Hello Ada`, so it fails; '
                "I did not push.",
                _usage(2351, 63, 2048, 0.00190),
            ),
        )
        window.new_session()
        window.controller.submit("Make greet() use an f-string and a friendlier greeting, then push.")
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
        settings.update_profile(replace(settings.profiles[0], base_url=None))  # the preset's real URL and prices
        window.settings_saved()
        await asyncio.sleep(0.3)

        first = window.sessions.model.index(window.sessions.model.rowCount() - 1, 0)
        window.sessions.list_view.setCurrentIndex(first)
        window.sessions.session_activated.emit(window.sessions.model.data(first, window.sessions.model.SessionRole))
        await asyncio.sleep(0.3)
        timeline = window.timeline
        assert timeline is not None
        model = window.transcript.transcript_model()
        tools = {item.call_id: row for row, item in enumerate(timeline.items) if isinstance(item, ToolItem)}
        window.transcript.set_expanded(model.index(tools["call_3"], 0), True)
        window.transcript.scrollTo(model.index(tools["call_5"], 0))
        window.inspector.show_item(None)
        await asyncio.sleep(0.5)
        app.processEvents()
        window.grab().save(str(OUT / "screenshot-main.png"))

        window.transcript.setCurrentIndex(model.index(tools["call_4"], 0))
        await asyncio.sleep(0.3)
        app.processEvents()
        window.grab().save(str(OUT / "screenshot-inspector.png"))

        window.inspector.show_item(None)
        window.transcript.clearSelection()
        app.setPalette(_dark_palette())
        window.resize(1024, 640)
        window.splitter.setSizes([220, 480, 324])
        await asyncio.sleep(0.5)
        app.processEvents()
        window.grab().save(str(OUT / "screenshot-dark.png"))
        app.setPalette(app.style().standardPalette())
        window.resize(1440, 900)

        window.show_costs()
        for _ in range(100):  # the rows load in the cost worker thread
            if window.cost_view.sessions_model.rowCount():
                break
            await asyncio.sleep(0.05)
        window.cost_view.table.selectAll()  # the selected sessions side by side
        await asyncio.sleep(0.5)
        app.processEvents()
        window.grab().save(str(OUT / "screenshot-costs.png"))
        window.controller.close()

        tool = next(t for t in builtin_tools(workspace) if t.name == "edit")
        arguments = {"path": "greet.py", "edits": [{"oldText": 'f"Hello, {name}!"', "newText": 'f"Hi, {name}!"'}]}
        approval = ApprovalDialog(
            await ApprovalPolicy(ToolSettings.in_memory()).request_for(
                tool, arguments, call_id="call_9", rationale="A shorter greeting reads better in the CLI banner."
            ),
            window,
        )
        approval.resize(760, 560)
        approval.show()
        await asyncio.sleep(0.3)
        app.processEvents()
        approval.grab().save(str(OUT / "screenshot-approval.png"))
        approval.close()

        settings.update_profile(replace(settings.profiles[0], base_url=None))  # show the preset's real URL
        dialog = SettingsDialog(
            settings,
            ToolSettings.in_memory(),
            KeyStore(environ={}),
            ProviderCalls.over_http(http),
            window,
            mcp_catalog=catalog,
        )
        dialog.resize(900, 620)
        dialog.show()
        await asyncio.sleep(0.3)
        app.processEvents()
        dialog.grab().save(str(OUT / "screenshot-settings.png"))
        assert dialog.mcp is not None
        dialog.tabs.setCurrentWidget(dialog.mcp)
        await asyncio.sleep(0.2)
        app.processEvents()
        dialog.grab().save(str(OUT / "screenshot-mcp.png"))
        dialog.close()

        fresh = MainWindow(replace(services, settings=AppSettings()))
        fresh.resize(1100, 700)
        fresh.show()
        await asyncio.sleep(0.4)
        app.processEvents()
        fresh.grab().save(str(OUT / "screenshot-welcome.png"))
        fresh.close()
        window.composer.editor.clear()  # nothing unsent: the window closes without asking
        window.close()
        ledger.close()
        await http.aclose()


_MCP_CATALOG = {
    "servers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]},
        "issues": {"url": "https://mcp.example.com/mcp", "tokenEnv": "ISSUES_TOKEN", "callTimeoutMs": 30000},
    },
    "enabled": ["files"],
}
"""The MCP tab's screenshot: a local server (enabled) and a remote one."""

_COMPARED = ("anthropic/claude-sonnet-4.5", "openai/gpt-5", "deepseek/deepseek-chat")


def _compare_scripts() -> dict[str, list[Reply]]:
    """Three models on the same task: two edit and answer, one also tries a command it may not run."""

    def edit(new: str) -> dict[str, Any]:
        return {"path": "greet.py", "edits": [{"oldText": '"Hello " + name', "newText": new}]}

    sonnet, gpt, deepseek = _COMPARED
    return {
        sonnet: [
            tool_call("c1", "read", {"path": "greet.py"}, usage=(1840, 41), cost=0.00615, pace=0.05),
            tool_call("c2", "edit", edit('f"Hello, {name}!"'), usage=(1932, 88), cost=0.00233, pace=0.05),
            answer("greet() now returns an f-string: `Hello, Ada!`.", pieces=12, pace=0.04, usage=(2010, 24),
                   cost=0.00141),
        ],
        gpt: [
            tool_call("g1", "edit", edit('f"Hi {name} 👋"'), usage=(1790, 120), cost=0.00344, pace=0.05),
            answer("Done: a friendlier greeting with an emoji.", pieces=10, pace=0.05, usage=(1960, 18),
                   cost=0.00263),
        ],
        deepseek: [
            tool_call("d1", "edit", edit('"Hello, " + name + "!"'), usage=(1810, 60), cost=0.00031, pace=0.03),
            tool_call("d2", "bash", {"command": "python3 -m unittest -q"}, usage=(1900, 30), cost=0.00027),
            answer("Changed the greeting; I could not run the tests (bash is not allowed).", pieces=14,
                   pace=0.03, usage=(2050, 31), cost=0.00029),
        ],
    }  # fmt: skip


async def _compare_demo(app: QApplication) -> None:
    """A finished 3-model compare in the compare view, 1024×640, dark."""
    with tempfile.TemporaryDirectory() as root, LoopbackServer() as server:
        base = Path(root)
        os.environ["TINY_AGENT_DATA_DIR"] = str(base / "data")
        workspace = base / "demo-project"
        workspace.mkdir()
        (workspace / "greet.py").write_text('def greet(name):\n    return "Hello " + name\n')
        server.handler = ScriptedModels(_compare_scripts())
        settings = AppSettings()
        profile = replace(ProfileConfig.from_preset("openrouter", "openrouter"), base_url=server.base_url)
        settings.add_profile(replace(profile, model=_COMPARED[0]))
        settings.active_profile = "openrouter"
        settings.add_workspace(workspace)
        http = httpx.AsyncClient(trust_env=False)
        client = ProviderClient(http)
        ledger = connect(base / "index.sqlite3")
        services = Services(client, ledger, settings, KeyStore(environ={}), ToolSettings.in_memory(), ask_context=False)
        app.setPalette(_dark_palette())
        window = MainWindow(services)
        window.resize(1024, 640)
        window.show()
        window.composer.editor.setPlainText("Make greet() friendlier and keep the tests passing.")
        window.show_compare_action.trigger()  # Ctrl+3
        view = window.compare_view
        view.models.setCurrentRow(0)
        # the current model, added by showing the compare view: priced as local (a loopback URL)
        view.remove_button.click()
        for model in _COMPARED:  # priced as OpenRouter's (the price table)
            view.add_model(ModelEntry("openrouter", "OpenRouter", model, rates_in_use("openrouter", model)))
        view.start()
        await view.wait()
        await asyncio.sleep(0.5)
        view.table.setCurrentIndex(view.table_model.index(0, 0))
        await asyncio.sleep(0.3)
        app.processEvents()
        window.grab().save(str(OUT / "screenshot-compare.png"))
        app.setPalette(app.style().standardPalette())
        window.composer.editor.clear()  # nothing unsent: the window closes without asking
        window.close()
        ledger.close()
        await http.aclose()


def main() -> None:
    """Render the screenshots (only the compare view's with the argument ``compare``)."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    loop = HookedQEventLoop(app)
    asyncio.set_event_loop(loop)
    if sys.argv[1:] != ["compare"]:
        loop.run_until_complete(_demo(app))
    loop.run_until_complete(_compare_demo(app))
    print("wrote", ", ".join(sorted(p.name for p in OUT.glob("screenshot-*.png"))))


if __name__ == "__main__":
    main()
