"""System prompt assembly: AGENTS.md, skills (metadata only), and the configuration snapshot."""

from __future__ import annotations

from pathlib import Path

from tiny_agent_core.agent.context import Configuration, build_system_prompt, current_configuration, discover_skills
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
