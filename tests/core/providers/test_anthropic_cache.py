"""What the automatic cache breakpoints are worth over a scripted 10-step agent run.

The real cache hit rate needs the real API; here the API's documented caching is modelled on the bodies the adapter
actually builds, so the number follows the breakpoint rule and would change with it:

- the cacheable prefix is tools, then system, then messages, block by block; a breakpoint caches the prefix that
  ends at its block (the ``cache_control`` markers themselves are not part of the prefix);
- a request reads the longest prefix ending at one of its breakpoints that an earlier request cached, and writes
  every longer breakpoint prefix; tokens after the last breakpoint are uncached input;
- a prefix below :data:`MIN_CACHEABLE_TOKENS` is never cached (the API's minimum for Sonnet and Opus models);
- nothing expires between steps (they are seconds apart; the cache lives 5 minutes);
- tokens are estimated as :data:`CHARS_PER_TOKEN` characters of the blocks' JSON.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from tiny_agent_core.agent.context import build_system_prompt
from tiny_agent_core.providers.anthropic_request import build_body
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.tools.registry import builtin_tools, tool_definitions
from tiny_agent_core.usage import Usage

MIN_CACHEABLE_TOKENS = 1024
CHARS_PER_TOKEN = 4
STEPS = 10
PROFILE = ProviderProfile("anthropic", "Anthropic", "https://api.anthropic.com/v1")


def scripted_transcript(steps: int) -> list[dict[str, Any]]:
    """A prompt, then ``steps - 1`` tool rounds (assistant text + one call, a 1–2 KB result), as canonical JSON."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "The test in tests/test_calc.py fails; fix it."}]
    tools = ["read", "bash", "edit"]
    for step in range(1, steps):
        call_id = f"toolu_{step:02d}"
        tool = tools[step % len(tools)]
        arguments = json.dumps({"path": f"src/module_{step}.py"} if tool != "bash" else {"command": "pytest -q"})
        messages.append(
            {
                "role": "assistant",
                "content": f"Step {step}: let me look at the next piece.",
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}],
            }
        )
        output = "".join(f"{line:4d}  def function_{line}(value):  # returns value * {step}\n" for line in range(30))
        messages.append({"role": "tool", "tool_call_id": call_id, "content": output[: 1000 + 100 * step]})
    return messages


def _plain(block: dict[str, Any]) -> str:
    return json.dumps({key: value for key, value in block.items() if key != "cache_control"}, sort_keys=True)


def prefix_blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """``(block JSON, is a breakpoint)`` in the API's prefix order: tools, system, then each message's blocks."""
    blocks = [*body.get("tools", ()), *body.get("system", ())]
    out = [(_plain(block), "cache_control" in block) for block in blocks]
    for message in body["messages"]:
        for block in message["content"]:
            out.append((message["role"] + _plain(block), "cache_control" in block))
    return out


def simulate(bodies: list[dict[str, Any]]) -> list[Usage]:
    """The prompt-side usage each request would report under the module docstring's model."""
    cached: set[str] = set()
    usages: list[Usage] = []
    for body in bodies:
        blocks = prefix_blocks(body)
        sizes = [len(text) // CHARS_PER_TOKEN for text, _ in blocks]
        ends = [index for index, (_, marked) in enumerate(blocks) if marked]
        keys = {end: "".join(text for text, _ in blocks[: end + 1]) for end in ends}
        total = sum(sizes)
        hits = [end for end in ends if keys[end] in cached]
        read = sum(sizes[: hits[-1] + 1]) if hits else 0
        last = ends[-1] if ends else -1
        written = sum(sizes[: last + 1]) - read
        for end in ends:
            if sum(sizes[: end + 1]) >= MIN_CACHEABLE_TOKENS:
                cached.add(keys[end])
        if sum(sizes[: last + 1]) < MIN_CACHEABLE_TOKENS:
            written = 0
        usages.append(Usage(input=total - read - written, output=0, cache_read=read, cache_write=written))
    return usages


def ten_step_usages(workspace: Path) -> list[Usage]:
    """The modelled usage of the 10 requests of the scripted run, with the real system prompt and tools."""
    tools = builtin_tools(workspace)
    definitions = tool_definitions(tools)
    system = {"role": "system", "content": build_system_prompt(workspace, [tool.name for tool in tools])}
    transcript = scripted_transcript(STEPS)
    bodies = [
        build_body(PROFILE, "claude-sonnet-4-5", [system, *transcript[: 2 * step + 1]], definitions)
        for step in range(STEPS)
    ]
    return simulate(bodies)


def test_each_step_reads_the_whole_previous_request_once_it_is_cacheable(tmp_path: Path) -> None:
    usages = ten_step_usages(tmp_path)
    assert usages[0].cache_read == 0
    for previous, current in itertools.pairwise(usages):
        if previous.prompt >= MIN_CACHEABLE_TOKENS:
            assert current.cache_read == previous.prompt
        if current.prompt >= MIN_CACHEABLE_TOKENS:
            assert current.input == 0  # the last breakpoint closes the prompt: nothing is left uncached


def test_the_ten_step_run_reads_most_prompt_tokens_from_the_cache(tmp_path: Path) -> None:
    total = sum(ten_step_usages(tmp_path), Usage(0, 0))
    rate = total.cache_hit_rate
    assert rate is not None
    # Measured: 0.79 of all prompt tokens are cache reads, 0.17 cache writes, 0.03 uncached (the first request,
    # system prompt and tools of ~940 tokens, is below the minimum cacheable length).
    assert 0.75 < rate < 0.9
