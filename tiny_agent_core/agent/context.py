"""What the model is told: the system prompt (preamble, ``AGENTS.md``, skills) and the configuration snapshot.

As the reference does (notes §7.4): only ``<workspace>/AGENTS.md`` is read, wrapped in ``<project_context>``;
skills are ``SKILL.md`` files under ``<workspace>/.tiny-agent/skills/`` whose single-line ``name:`` and
``description:`` frontmatter is listed (the body is never preloaded). The system prompt is rebuilt per request and
never persisted; only its digest enters the configuration snapshot (notes §5.8), whose digest the recovery planner
compares to decide whether an interrupted run may continue (:func:`configuration_differences` names what
changed when it may not).

``systemPromptDigest`` follows the TypeScript reference (the digest of the JSON string). ``adapterIdentity`` names
this client's protocol mapping and ``routingIdentity`` is ``<provider profile>:<model>``: a session started
elsewhere therefore recovers here only through the planner's ``configuration_changed`` choice, as between the
reference's own languages.

Token estimates (:func:`prompt_floor`, :func:`answer_room`) work on the request's UTF-8 JSON size, never a
tokenizer: a floor (6 bytes a token, below any real tokenizer on text, code or JSON) tells when the server cannot
have put the tools in the prompt; a ceiling (2 bytes a token: ids, hashes and JSON tokenize that densely),
anchored to the prompt tokens the server counted for an earlier request of the same conversation when there is
one, tells how much room the answer surely has.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiny_agent_core.agent.project_files import AGENTS_MD_LIMIT, SKILL_HEAD_LIMIT, read_project_file, skill_files
from tiny_agent_core.session import facts
from tiny_agent_core.session.store import environment_identity
from tiny_agent_core.tools.base import Tool
from tiny_agent_core.tools.registry import definition_identity, replay_declaration

ADAPTER_IDENTITY = "openai-compatible:chat-completions:v1"
"""Names the wire protocol the requests use; part of every configuration snapshot."""

FLOOR_BYTES_PER_TOKEN = 6
"""UTF-8 bytes of request JSON per token, at most, for a low estimate of a prompt's tokens."""
CEILING_BYTES_PER_TOKEN = 2
"""UTF-8 bytes of request JSON per token, at least, for a high estimate of a prompt's tokens."""
MARGIN_DIVISOR = 20
"""A twentieth of the context window is kept free beyond the estimate (chat template, tool rendering)."""
MIN_ANSWER_ROOM = 64
"""Below this many tokens of room, ``max_tokens`` is not sent: the server decides (and says if the prompt does not
fit)."""

_FRONTMATTER = re.compile(r"\A---\n(.*?)\n---(?:\n|\Z)", re.DOTALL)
_FIELD = re.compile(r"^(name|description):[ \t]*(.*?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Skill:
    """A skill the model may load by reading its file."""

    name: str
    description: str
    location: Path


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def discover_skills(workspace: Path) -> list[Skill]:
    """Every ``SKILL.md`` under ``<workspace>/.tiny-agent/skills/``, sorted by path; files that cannot be read
    safely are skipped (:mod:`~tiny_agent_core.agent.project_files`)."""
    skills: list[Skill] = []
    for relative in skill_files(workspace):
        read = read_project_file(workspace, relative, SKILL_HEAD_LIMIT)
        if read is None:
            continue
        fields: dict[str, str] = {}
        match = _FRONTMATTER.match(read.text.replace("\r\n", "\n"))
        if match:
            fields = {key: _unquote(value) for key, value in _FIELD.findall(match.group(1))}
        skills.append(Skill(fields.get("name") or read.path.parent.name, fields.get("description", ""), read.path))
    return skills


def read_agents_md(workspace: Path) -> tuple[Path, str] | None:
    """``<workspace>/AGENTS.md`` (its real path, its text), or ``None`` when there is none that may be read (see
    :mod:`~tiny_agent_core.agent.project_files`); a file longer than :data:`AGENTS_MD_LIMIT` gives its start, and
    says so."""
    read = read_project_file(workspace, "AGENTS.md", AGENTS_MD_LIMIT)
    if read is None:
        return None
    if read.cut:
        return read.path, f"{read.text}\n[AGENTS.md is longer than {AGENTS_MD_LIMIT:,} bytes: the rest is left out]"
    return read.path, read.text


def build_system_prompt(workspace: Path, tool_names: Sequence[str]) -> str:
    """The system message for one request in ``workspace`` with the given tools offered."""
    tools = ", ".join(tool_names) if tool_names else "(none)"
    parts = [
        "You are tiny-agent, a small coding agent working in the directory "
        f"{workspace}. Use only the provided tools ({tools}); if a task needs a capability you do not have, "
        "say so and explain what is missing instead of pretending. Keep changes focused, implement what was "
        "asked, and add or run tests where that makes sense."
    ]
    agents = read_agents_md(workspace)
    if agents is not None:
        path, text = agents
        parts.append(
            f'<project_context>\n<project_instructions path="{path}">\n{text}\n</project_instructions>\n'
            "</project_context>"
        )
    skills = discover_skills(workspace)
    listed = "".join(
        f"<skill><name>{s.name}</name><description>{s.description}</description><location>{s.location}</location>"
        "</skill>"
        for s in skills
    )
    parts.append(f"<available_skills>{listed or '(none)'}</available_skills>")
    return "\n\n".join(parts)


@dataclass(frozen=True)
class Configuration:
    """The per-run configuration snapshot (notes §5.8), its digest, and the system prompt it was built from."""

    snapshot: dict[str, Any]
    digest: str
    system_prompt: str

    @classmethod
    def build(
        cls,
        *,
        workspace: Path,
        provider: str,
        model: str,
        tools: Sequence[Tool],
        system_prompt: str | None = None,
    ) -> Configuration:
        """The snapshot for a run offering ``tools`` (a compaction passes its own prompt and no tools)."""
        prompt = system_prompt if system_prompt is not None else build_system_prompt(workspace, [t.name for t in tools])
        snapshot = facts.configuration_snapshot(
            model=model,
            system_prompt_digest=facts.system_prompt_digest(prompt),
            tools=[(tool.name, _definition_digest(tool)) for tool in tools],
            adapter_identity=ADAPTER_IDENTITY,
            routing_identity=f"{provider}:{model}",
        )
        return cls(snapshot, facts.configuration_digest(snapshot), prompt)


def _definition_digest(tool: Tool) -> str:
    identity = definition_identity(tool)
    return facts.tool_definition_digest(identity["name"], identity["description"], identity["parameters"])


def current_configuration(configuration: Configuration, workspace: Path, tools: Sequence[Tool]) -> dict[str, Any]:
    """The planner's ``current`` input: this process's configuration digest, environment and tool declarations."""
    declarations = []
    for tool in tools:
        replay = replay_declaration(tool)
        declarations.append(
            {
                "name": tool.name,
                "definitionDigest": _definition_digest(tool),
                "replay": replay.replay,
                "replayKey": replay.replay_key,
            }
        )
    return {
        "configurationDigest": configuration.digest,
        "environmentIdentity": environment_identity(workspace),
        "tools": declarations,
    }


@dataclass(frozen=True)
class PromptMeasure:
    """One request's size (:func:`request_bytes`) and the prompt tokens the server counted for it."""

    size: int
    tokens: int


def request_bytes(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None) -> int:
    """The UTF-8 size of a request's messages and tool definitions as JSON: what the token estimates work on."""
    text = json.dumps([list(messages), list(tools or ())], ensure_ascii=False)
    return len(text.encode("utf-8", "surrogatepass"))


def prompt_floor(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None) -> int:
    """A low estimate of the prompt tokens ``messages`` and ``tools`` need (see the module docstring)."""
    return request_bytes(messages, tools) // FLOOR_BYTES_PER_TOKEN


def answer_room(
    context_window: int,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    last: PromptMeasure | None = None,
) -> int | None:
    """The ``max_tokens`` that surely fits ``context_window`` after this prompt, or ``None`` when that leaves less
    than :data:`MIN_ANSWER_ROOM` tokens (the server then decides, and says if the prompt does not fit).

    The prompt is estimated high: ``last`` (an earlier request of the same conversation, no larger) plus the new
    bytes at the ceiling rate, else all bytes at that rate; a twentieth of the window is kept free beyond it.
    """
    return room_for_size(context_window, request_bytes(messages, tools), last)


def room_for_size(context_window: int, size: int, last: PromptMeasure | None = None) -> int | None:
    """:func:`answer_room` for a request of ``size`` bytes (:func:`request_bytes`), when the caller has measured it."""
    if last is not None and size >= last.size:
        estimate = last.tokens + (size - last.size) // CEILING_BYTES_PER_TOKEN
    else:
        estimate = size // CEILING_BYTES_PER_TOKEN
    room = context_window - estimate - context_window // MARGIN_DIVISOR
    return room if room >= MIN_ANSWER_ROOM else None


def configuration_differences(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs between two configuration snapshots, one phrase per field (``model 'a' → 'b'``, ``tools added:
    bash``, ``system prompt``…); empty when they are equal."""
    out: list[str] = []
    if recorded.get("model") != current.get("model"):
        out.append(f"model {recorded.get('model')!r} → {current.get('model')!r}")
    if recorded.get("routingIdentity") != current.get("routingIdentity"):
        out.append(f"provider {recorded.get('routingIdentity')!r} → {current.get('routingIdentity')!r}")
    if recorded.get("systemPromptDigest") != current.get("systemPromptDigest"):
        out.append("system prompt (workspace, AGENTS.md, skills or the offered tools' names)")
    before = {item["name"]: item["definitionDigest"] for item in recorded.get("tools", ())}
    after = {item["name"]: item["definitionDigest"] for item in current.get("tools", ())}
    for label, names in (
        ("tools added", [name for name in after if name not in before]),
        ("tools removed", [name for name in before if name not in after]),
        ("tool definitions changed", [name for name in after if name in before and before[name] != after[name]]),
    ):
        if names:
            out.append(f"{label}: {', '.join(names)}")
    for key, label in (("adapterIdentity", "wire adapter"), ("outputOptionsDigest", "output options")):
        if recorded.get(key) != current.get(key):
            out.append(label)
    return out
