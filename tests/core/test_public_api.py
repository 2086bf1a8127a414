"""The core's public API: ``__all__`` is sorted and names exactly what the package exports, each on first use."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import tiny_agent_core

PLUMBING = {"annotations", "importlib", "TYPE_CHECKING", "Any"}
"""What the lazy ``__init__`` itself imports."""


def _is_submodule(name: str) -> bool:
    value = vars(tiny_agent_core)[name]
    return isinstance(value, types.ModuleType) and value.__name__ == f"tiny_agent_core.{name}"


def test_all_is_sorted_and_complete() -> None:
    assert tiny_agent_core.__all__ == sorted(tiny_agent_core.__all__)
    for name in tiny_agent_core.__all__:  # every name resolves (imported lazily) and then stays in the module
        assert getattr(tiny_agent_core, name) is vars(tiny_agent_core)[name]
    public = {name for name in vars(tiny_agent_core) if not name.startswith("_")}
    submodules = {name for name in public if _is_submodule(name)}  # set by whatever imported them
    assert public - submodules - PLUMBING == set(tiny_agent_core.__all__)
    assert set(tiny_agent_core.__all__) <= set(dir(tiny_agent_core))


def test_an_unknown_name_is_an_attribute_error() -> None:
    assert not hasattr(tiny_agent_core, "NoSuchName")


def _loaded_after(statement: str, prefixes: tuple[str, ...]) -> list[str]:
    listing = f"json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r})))"
    code = f"import json, sys; {statement}; print({listing})"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    loaded: list[str] = json.loads(out.stdout)
    return loaded


def test_importing_the_core_never_loads_qt() -> None:
    assert _loaded_after("import tiny_agent_core, tiny_agent_core.cli", ("PySide6", "qasync")) == []


def test_the_core_and_its_sessions_load_no_agent_or_http_until_asked() -> None:
    heavy = ("httpx", "pydantic", "tiny_agent_core.agent", "tiny_agent_core.providers")
    assert _loaded_after("import tiny_agent_core, tiny_agent_core.session", heavy) == []
    assert "httpx" in _loaded_after("from tiny_agent_core import Agent", heavy)
