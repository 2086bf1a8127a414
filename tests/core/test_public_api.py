"""The core's public API: ``__all__`` is sorted and names exactly what the package exports."""

from __future__ import annotations

import subprocess
import sys

import tiny_agent_core


def test_all_is_sorted_and_complete() -> None:
    assert tiny_agent_core.__all__ == sorted(tiny_agent_core.__all__)
    public = {name for name in vars(tiny_agent_core) if not name.startswith("_")}
    subpackages = {"agent", "errors", "messages", "pricing", "providers", "seam", "stop_reasons", "transcript", "usage"}
    subpackages |= {"session", "tools", "ledger", "cli", "timeline", "settings", "secrets", "workbench", "redaction"}
    assert public - subpackages == set(tiny_agent_core.__all__)


def test_importing_the_core_never_loads_qt() -> None:
    code = (
        "import sys, tiny_agent_core, tiny_agent_core.cli; "
        "print(any(m.startswith(('PySide6', 'qasync')) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"
