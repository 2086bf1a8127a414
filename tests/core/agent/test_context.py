"""System prompt assembly: AGENTS.md, skills (metadata only), and the configuration snapshot."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tiny_agent_core.agent import project_files
from tiny_agent_core.agent.context import Configuration, build_system_prompt, current_configuration, discover_skills
from tiny_agent_core.agent.project_files import AGENTS_MD_LIMIT
from tiny_agent_core.session.canonical_json import canonical_digest
from tiny_agent_core.tools.registry import builtin_tools


def test_agents_md_is_wrapped_and_skills_are_listed_without_their_bodies(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    skill = tmp_path / ".tiny-agent" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text('---\nname: "deploy-app"\ndescription: How to deploy\n---\nSECRET BODY\n')
    bare = tmp_path / ".tiny-agent" / "skills" / "bare" / "SKILL.md"
    bare.parent.mkdir(parents=True)
    bare.write_text("no frontmatter\n")
    prompt = build_system_prompt(tmp_path, ["read"])
    assert f'<project_instructions path="{(tmp_path / "AGENTS.md").resolve()}">\nUse tabs.\n' in prompt
    assert "<skill><name>deploy-app</name><description>How to deploy</description>" in prompt
    assert "<skill><name>bare</name><description></description>" in prompt
    assert "SECRET BODY" not in prompt
    assert [s.name for s in discover_skills(tmp_path)] == ["bare", "deploy-app"]


def test_no_agents_md_and_no_skills(tmp_path: Path) -> None:
    prompt = build_system_prompt(tmp_path, [])
    assert "<project_context>" not in prompt
    assert "<available_skills>(none)</available_skills>" in prompt


def test_configuration_snapshot_has_the_reference_keys_and_digest(tmp_path: Path) -> None:
    tools = builtin_tools(tmp_path, names=["read", "bash"])
    configuration = Configuration.build(workspace=tmp_path, provider="openrouter", model="m", tools=tools)
    snapshot = configuration.snapshot
    assert set(snapshot) == {
        "model",
        "systemPromptDigest",
        "tools",
        "adapterIdentity",
        "routingIdentity",
        "outputOptionsDigest",
    }
    assert snapshot["systemPromptDigest"] == canonical_digest(configuration.system_prompt)
    assert [tool["name"] for tool in snapshot["tools"]] == ["bash", "read"]
    assert snapshot["routingIdentity"] == "openrouter:m"
    assert configuration.digest == canonical_digest(snapshot)
    current = current_configuration(configuration, tmp_path, tools)
    assert [(t["name"], t["replay"], t["replayKey"]) for t in current["tools"]] == [
        ("bash", "never", "builtin:bash:v1"),
        ("read", "safe", "builtin:read:v1"),
    ]
    other = Configuration.build(workspace=tmp_path, provider="openrouter", model="other", tools=tools)
    assert other.digest != configuration.digest


# -- a hostile repository: what it puts at AGENTS.md and under the skills folder is sent to the provider --------


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and, beside it, a secret file outside it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    secret = tmp_path / "credentials"
    secret.write_text("---\nname: aws\ndescription: AKIA-SECRET-KEY\n---\naws_secret_access_key = SECRET\n")
    return workspace, secret


def test_an_agents_md_link_leading_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    workspace, secret = _workspace(tmp_path)
    (workspace / "AGENTS.md").symlink_to(secret)
    prompt = build_system_prompt(workspace, ["read"])
    assert "SECRET" not in prompt
    assert "<project_context>" not in prompt
    (workspace / "AGENTS.md").unlink()
    (workspace / "docs").mkdir()
    (workspace / "docs" / "rules.md").write_text("Use tabs.\n")
    (workspace / "AGENTS.md").symlink_to("docs/rules.md")  # a link that stays inside is followed
    assert f'<project_instructions path="{(workspace / "docs" / "rules.md").resolve()}">\nUse tabs.\n' in (
        build_system_prompt(workspace, ["read"])
    )


def test_a_fifo_or_a_folder_at_agents_md_is_skipped_without_waiting(tmp_path: Path) -> None:
    workspace, _secret = _workspace(tmp_path)
    os.mkfifo(workspace / "AGENTS.md")  # opening it for reading would wait for a writer forever
    assert "<project_context>" not in build_system_prompt(workspace, [])
    (workspace / "AGENTS.md").unlink()
    (workspace / "AGENTS.md").mkdir()
    assert "<project_context>" not in build_system_prompt(workspace, [])


def test_a_huge_agents_md_is_cut_and_the_prompt_says_so(tmp_path: Path) -> None:
    workspace, _secret = _workspace(tmp_path)
    (workspace / "AGENTS.md").write_text("x" + "é" * AGENTS_MD_LIMIT)  # twice the limit; the cut splits an é
    prompt = build_system_prompt(workspace, [])
    kept = (AGENTS_MD_LIMIT - 1) // 2
    assert "x" + "é" * kept + "\n[AGENTS.md is longer" in prompt
    assert f"[AGENTS.md is longer than {AGENTS_MD_LIMIT:,} bytes: the rest is left out]" in prompt


def test_skills_are_only_read_inside_the_workspace_and_only_regular_files(tmp_path: Path) -> None:
    workspace, secret = _workspace(tmp_path)
    skills = workspace / ".tiny-agent" / "skills"
    (skills / "real").mkdir(parents=True)
    (skills / "real" / "SKILL.md").write_text("---\nname: real\ndescription: fine\n---\n")
    (skills / "linked").mkdir()
    (skills / "linked" / "SKILL.md").symlink_to(secret)  # a skill file leading out
    (skills / "outside").symlink_to(tmp_path, target_is_directory=True)  # a folder leading out: not searched
    (skills / "pipe").mkdir()
    os.mkfifo(skills / "pipe" / "SKILL.md")
    assert [skill.name for skill in discover_skills(workspace)] == ["real"]
    assert "AKIA" not in build_system_prompt(workspace, [])


def test_a_skills_folder_that_leads_out_of_the_workspace_has_no_skills(tmp_path: Path) -> None:
    workspace, _secret = _workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere" / "deploy"
    elsewhere.mkdir(parents=True)
    (elsewhere / "SKILL.md").write_text("---\nname: deploy\ndescription: from outside\n---\n")
    (workspace / ".tiny-agent").mkdir()
    (workspace / ".tiny-agent" / "skills").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert discover_skills(workspace) == []


def test_the_search_for_skills_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace, _secret = _workspace(tmp_path)
    skills = workspace / ".tiny-agent" / "skills"
    for number in range(5):
        (skills / f"s{number}").mkdir(parents=True)
        (skills / f"s{number}" / "SKILL.md").write_text(f"---\nname: s{number}\n---\n")
    deep = skills.joinpath(*["d"] * (project_files.MAX_SKILL_DEPTH + 2))
    deep.mkdir(parents=True)
    (deep / "SKILL.md").write_text("---\nname: too-deep\n---\n")
    names = [skill.name for skill in discover_skills(workspace)]
    assert names == ["s0", "s1", "s2", "s3", "s4"]  # the one below the depth limit is not looked for
    monkeypatch.setattr(project_files, "MAX_SKILLS", 3)
    assert len(discover_skills(workspace)) == 3
