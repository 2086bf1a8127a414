"""The agent against a hostile model: secrets never persisted or sent, a looping model stopped."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.core.agent.conftest import API_KEY, Harness, make_agent, text_reply, tool_reply
from tests.loopback import LoopbackServer, Reply
from tiny_agent_core.agent import events
from tiny_agent_core.agent.loop import STEP_LIMIT
from tiny_agent_core.errors import StepLimitError
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.redaction import REDACTED, Redactor, masks_variable
from tiny_agent_core.timeline import CONTINUE_PROMPT, NoticeItem, Timeline
from tiny_agent_core.tools.approval import ApprovalAnswer, ApprovalRequest, Choice
from tiny_agent_core.tools.base import BuiltinTool
from tiny_agent_core.tools.registry import ToolSet

ENV_SECRET = "env-canary-7f3c9a1b2d4e6f80"


def _everything_persisted_or_sent(workspace: Path, server: LoopbackServer, session: Path) -> str:
    sent = "".join(request.body.decode("utf-8", "replace") for request in server.requests)
    return sent + session.read_text()


async def test_a_key_read_from_a_file_is_masked_before_it_is_persisted_or_sent(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    (workspace / "leak.txt").write_text(f"key={API_KEY}\nescaped={API_KEY!r}\n")
    harness = make_agent(workspace, server, http)
    server.queue(tool_reply(("r1", "read", '{"path": "leak.txt"}')), text_reply("Done."))
    result = await harness.agent.run("read it")
    harness.store.close()
    assert result.outcome == "completed"
    everything = _everything_persisted_or_sent(workspace, server, harness.store.path)
    assert API_KEY not in everything
    assert f"key={REDACTED}" in harness.request_messages(1)[-1]["content"]
    finished = [e for e in harness.events if isinstance(e, events.ToolFinished)]
    assert API_KEY not in finished[0].content


async def test_secret_named_environment_values_are_masked_in_tool_output(
    workspace: Path, server: LoopbackServer, http: ProviderClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_PROVIDER_KEY", ENV_SECRET)
    (workspace / "env.txt").write_text(f"MY_PROVIDER_KEY={ENV_SECRET}\n")
    harness = make_agent(workspace, server, http)
    server.queue(tool_reply(("r1", "read", '{"path": "env.txt"}')), text_reply("Done."))
    await harness.agent.run("read it")
    harness.store.close()
    assert ENV_SECRET not in _everything_persisted_or_sent(workspace, server, harness.store.path)


async def test_bash_env_and_proc_environ_never_reach_the_model(
    workspace: Path, server: LoopbackServer, http: ProviderClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_PROVIDER_KEY", ENV_SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    harness = make_agent(workspace, server, http)
    server.queue(
        tool_reply(
            ("b1", "bash", '{"command": "env"}'),
            ("b2", "bash", '{"command": "cat /proc/$PPID/environ | tr \\"\\\\0\\" \\"\\\\n\\""}'),
            ("b3", "bash", '{"command": "cat /proc/1/environ | tr \\"\\\\0\\" \\"\\\\n\\""}'),
        ),
        text_reply("Done."),
    )
    result = await harness.agent.run("show the environment")
    harness.store.close()
    assert result.outcome == "completed"
    everything = _everything_persisted_or_sent(workspace, server, harness.store.path)
    assert API_KEY not in everything
    assert ENV_SECRET not in everything
    assert os.environ["OPENAI_API_KEY"] == API_KEY  # the agent's own environment is untouched


async def test_a_looping_model_is_stopped_at_the_step_limit(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    harness = make_agent(workspace, server, http, max_steps=3)
    for index in range(5):
        server.queue(tool_reply((f"c{index}", "read", '{"path": "a.txt"}')))
    result = await harness.agent.run("loop")
    harness.store.close()
    assert result.outcome == "failed"
    assert isinstance(result.error, StepLimitError)
    assert len(server.requests) == 3
    state = harness.reduced()
    assert state.operation.kind == "idle"
    failed = harness.records_of("operationFinished")[-1]
    assert failed["outcome"] == "failed"
    assert failed["error"]["code"] == STEP_LIMIT
    finished = harness.events[-1]
    assert isinstance(finished, events.RunFinished)
    assert finished.error_kind == "step_limit"


async def test_the_session_accepts_a_new_prompt_after_the_step_limit(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    harness = make_agent(workspace, server, http, max_steps=1)
    server.queue(tool_reply(("c1", "read", '{"path": "a.txt"}')), text_reply("Finished."))
    assert (await harness.agent.run("loop")).outcome == "failed"
    result = await harness.agent.run("continue")
    harness.store.close()
    assert (result.outcome, result.answer) == ("completed", "Finished.")


def test_max_steps_must_be_positive(workspace: Path, server: LoopbackServer, http: ProviderClient) -> None:
    with pytest.raises(ValueError, match="positive"):
        make_agent(workspace, server, http, max_steps=0)


def test_redactor_masks_every_spelling_longest_first() -> None:
    redact = Redactor(['sk-abc\\def"ghi', "sk-abc", None, "ab"])
    assert redact('{"k": "sk-abc\\\\def\\"ghi"}') == '{"k": "[redacted]"}'
    assert redact('raw sk-abc\\def"ghi and sk-abc') == "raw [redacted] and [redacted]"
    assert redact("ab stays") == "ab stays"
    assert "sk-abc" not in repr(redact)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("aws_secret_access_key", True),
        ("DB_PASSWORD", True),
        ("MY_PROVIDER_KEY", True),
        ("PATH", False),
        ("PWD", False),
        ("KEYBOARD_LAYOUT", False),
        ("SSH_AUTH_SOCK", False),
    ],
)
def test_secret_looking_names(name: str, secret: bool) -> None:
    assert masks_variable(name) is secret


async def test_the_step_limit_notice_offers_continue(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    harness = make_agent(workspace, server, http, max_steps=1)
    server.queue(tool_reply(("c1", "read", '{"path": "a.txt"}')))
    await harness.agent.run("loop")
    harness.store.close()
    notice = Timeline.from_bytes(harness.store.path.read_bytes()).items[-1]
    assert isinstance(notice, NoticeItem)
    assert (notice.code, notice.retryable, notice.retry_label) == ("step_limit", True, "Continue")
    assert notice.retry_prompt == CONTINUE_PROMPT
    assert "limit of 1 model steps" in notice.text


class _Mojibake(BuiltinTool):
    """A tool whose output holds a lone surrogate (as a file name decoded with ``surrogateescape`` would)."""

    name = "mojibake"
    description = "Returns text that is not valid Unicode."
    parameters: Mapping[str, Any] = {"type": "object", "properties": {}}

    async def run(self, args: Mapping[str, Any], cancel: asyncio.Event | None) -> str:
        return "name-\udcff.txt and a half pair \ud800"


async def test_a_tool_result_that_is_not_valid_unicode_never_jams_the_session(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    harness = make_agent(workspace, server, http, allow=("mojibake",))
    harness.agent.tools = ToolSet([_Mojibake()])
    server.queue(tool_reply(("m1", "mojibake", "{}")), text_reply("Listed."), text_reply("Still usable."))
    assert (await harness.agent.run("list")).outcome == "completed"
    assert (await harness.agent.run("again")).answer == "Still usable."
    harness.store.close()
    state = harness.reduced()
    assert state.operation.kind == "idle"
    result = next(m["content"] for m in state.transcript if m["role"] == "tool")
    assert result.startswith("name-\ufffd.txt and a half pair \ufffd")
    assert "2 character(s) that are not valid Unicode were replaced" in result


async def test_a_provider_error_that_is_not_valid_unicode_is_committed_safely(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    harness = make_agent(workspace, server, http)
    server.queue(Reply.error(400, b'{"error": {"message": "bad \\ud800 input", "type": "invalid_request_error"}}'))
    server.queue(text_reply("Fine again."))
    result = await harness.agent.run("hi")
    assert result.outcome == "failed"
    assert (await harness.agent.run("again")).answer == "Fine again."
    harness.store.close()
    failed = harness.records_of("operationFinished")[0]
    assert "\ud800" not in failed["error"]["message"]


async def test_a_prompt_that_is_not_valid_unicode_is_refused_before_anything_is_written(harness: Harness) -> None:
    before = harness.store.path.read_bytes()
    with pytest.raises(ValueError, match="not valid Unicode"):
        await harness.agent.run("hello \udcff")
    assert harness.store.path.read_bytes() == before


async def test_the_approval_hears_the_model_rationale(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    """The model's words of the step travel with the approval request ("Why:" in the dialog)."""
    seen: list[ApprovalRequest] = []

    class Recording:
        async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
            seen.append(request)
            return ApprovalAnswer(Choice.ALLOW_ONCE)

    harness = make_agent(workspace, server, http)
    harness.agent.approver = Recording()
    call = ("w1", "write", '{"path": "notes.md", "content": "hi"}')
    server.queue(tool_reply(call, content="I will save your notes."), text_reply("Saved."))
    assert (await harness.agent.run("save notes")).outcome == "completed"
    harness.store.close()
    assert [request.rationale for request in seen] == ["I will save your notes."]
