"""The composer's commands (``/compact``, ``/skill:<name>``): parsing, and the message a skill sends."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiny_agent_core.agent.commands import (
    SKILL_BODY_LIMIT,
    Compact,
    UnknownSkillError,
    UseSkill,
    parse_command,
    skill_prompt,
    starts_a_session,
)

_NAME = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=20)


def test_compact_alone_is_a_command_and_with_more_it_is_a_prompt() -> None:
    assert parse_command("/compact") == Compact()
    assert parse_command("  /compact\n") == Compact()
    assert parse_command("/compact now please") is None
    assert parse_command("please /compact") is None
    assert parse_command("/COMPACT") is None


def test_a_skill_command_takes_the_name_to_the_first_space_and_the_rest_as_text() -> None:
    assert parse_command("/skill:deploy ship it\nto staging ") == UseSkill("deploy", "ship it\nto staging")
    assert parse_command("/skill:deploy") == UseSkill("deploy", "")
    assert parse_command("/skill:") == UseSkill("", "")
    assert parse_command("/skills are nice") is None
    assert parse_command("/exit") is None  # the window has Quit
    assert parse_command("hello") is None


@given(st.text(max_size=200))
def test_any_text_parses_to_a_command_or_nothing(text: str) -> None:
    command = parse_command(text)
    if command is not None:
        assert text.strip().startswith(("/compact", "/skill:"))
    if not text.strip().startswith("/"):
        assert command is None


@given(_NAME, st.text(max_size=200))
def test_a_skill_command_round_trips(name: str, text: str) -> None:
    assert parse_command(f"/skill:{name} {text}") == UseSkill(name, text.strip())


def _skill(workspace: Path, folder: str, content: str) -> Path:
    path = workspace / ".tiny-agent" / "skills" / folder / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    return path


def test_a_skill_sends_its_whole_file_then_the_text(tmp_path: Path) -> None:
    content = "---\nname: deploy-app\ndescription: Deploy\n---\nRun make deploy.\n"
    _skill(tmp_path, "deploy", content)
    assert skill_prompt(tmp_path, UseSkill("deploy-app", "to staging")) == f"{content}\n\nUser: to staging"


def test_a_skill_without_a_name_is_called_by_its_folder(tmp_path: Path) -> None:
    _skill(tmp_path, "bare", "Just do it.")
    assert skill_prompt(tmp_path, UseSkill("bare", "")) == "Just do it.\n\nUser: "


def test_an_unknown_skill_says_so_and_names_the_skills_there_are(tmp_path: Path) -> None:
    with pytest.raises(UnknownSkillError, match=r"^Unknown skill: nope \(this workspace has no"):
        skill_prompt(tmp_path, UseSkill("nope", "x"))
    _skill(tmp_path, "a", "---\nname: alpha\n---\n")
    _skill(tmp_path, "b", "---\nname: beta\n---\n")
    with pytest.raises(UnknownSkillError, match=r"^Unknown skill: nope \(the skills here are alpha, beta\)"):
        skill_prompt(tmp_path, UseSkill("nope", "x"))


def test_a_skill_file_leading_out_of_the_workspace_is_unknown(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: leak\n---\nsecret\n")
    link = workspace / ".tiny-agent" / "skills" / "leak" / "SKILL.md"
    link.parent.mkdir(parents=True)
    link.symlink_to(secret)
    with pytest.raises(UnknownSkillError, match="Unknown skill: leak"):
        skill_prompt(workspace, UseSkill("leak", ""))


def test_a_huge_skill_file_is_cut_and_the_message_says_so(tmp_path: Path) -> None:
    _skill(tmp_path, "big", "---\nname: big\n---\n" + "x" * (SKILL_BODY_LIMIT + 10))
    sent = skill_prompt(tmp_path, UseSkill("big", "go"))
    assert f"SKILL.md is longer than {SKILL_BODY_LIMIT:,} bytes" in sent
    assert sent.endswith("\n\nUser: go")
    assert len(sent.encode()) < SKILL_BODY_LIMIT + 200


def test_only_compact_sent_without_a_session_starts_none() -> None:
    assert not starts_a_session(" /compact ")
    assert starts_a_session("/compact the history")  # a prompt, not the command
    assert starts_a_session("/skill:deploy now")
    assert starts_a_session("hello")
