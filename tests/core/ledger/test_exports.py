"""The ledger package exports exactly its public names."""

from __future__ import annotations

import types


def test_public_api_is_exported() -> None:
    import tiny_agent_core.ledger as ledger

    assert ledger.__all__ == sorted(ledger.__all__)
    public = {
        name
        for name, value in vars(ledger).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(ledger.__all__)
