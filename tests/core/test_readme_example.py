"""The README's "Use the core as a library" example, run verbatim against a local OpenAI-compatible test server.

The fenced ``python`` block of that section is extracted from README.md and run in a child process (the way a
reader would run it), with ``OPENAI_BASE_URL`` and ``MODEL`` pointing at :class:`~tests.loopback.LoopbackServer`,
which answers with a ``read`` tool call, then a final answer with the provider's cost figure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.loopback import LoopbackServer
from tests.scripted_models import answer, tool_call

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Use the core as a library"


def readme_example() -> str:
    """The first ``python`` block of the README's library section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    found = re.search(r"^```python\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    assert found is not None, "the library section has no ```python block"
    return found.group(1)


def test_the_readme_example_runs_a_prompt_and_prints_the_transcript_and_cost(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(readme_example(), encoding="utf-8")
    with LoopbackServer() as server:
        server.queue(
            tool_call("call_1", "read", {"path": "notes.txt"}, cost=0.00021),
            answer("Buy milk, and call Ada about the release.", cost=0.00004),
        )
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "MODEL": "scripted-model", "NO_PROXY": "*"}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])  # this checkout
        env.pop("OPENAI_API_KEY", None)
        done = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        sent = [request.json() for request in server.requests]
    assert [body["model"] for body in sent] == ["scripted-model"] * 2
    assert "Buy milk. Call Ada" in sent[1]["messages"][-1]["content"]  # the read tool ran in the workspace
    lines = done.stdout.splitlines()
    assert lines == [
        "outcome: completed",
        "user: What does notes.txt ask me to do?",
        "assistant:  ['read']",
        "tool: Buy milk. Call Ada about the release.",
        "assistant: Buy milk, and call Ada about the release.",
        "title: What does notes.txt ask me to do?",
        "cost: $0.00025 (0 unknown)",
    ]
