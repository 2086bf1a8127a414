"""Line 1 of a session file: the header (``INVALID_HEADER`` / ``UNSUPPORTED_VERSION`` at line 1)."""

from __future__ import annotations

from typing import Any

from tiny_agent_core.session.rules.context import ValueChecks
from tiny_agent_core.session.state import SessionHeader

__all__ = ["parse_header"]

_HEADER_KEYS = frozenset({"kind", "version", "id", "createdAt", "cwd", "provider", "model", "environmentIdentity"})
_CODE = "INVALID_HEADER"


def parse_header(value: Any) -> SessionHeader:
    """The header of a parsed first line."""
    checks = ValueChecks(1)
    header = checks.object(value, _CODE)
    checks.only_keys(header, _HEADER_KEYS, _CODE)
    if header.get("kind") != "header":
        checks.fail(_CODE)
    version = header.get("version")
    if version != 2 or type(version) not in (int, float):
        checks.fail("UNSUPPORTED_VERSION")
    return SessionHeader(
        id=checks.uuid(header.get("id"), _CODE),
        created_at=checks.count(header.get("createdAt"), _CODE),
        cwd=checks.string(header.get("cwd"), _CODE),
        provider=checks.string(header.get("provider"), _CODE),
        model=checks.string(header.get("model"), _CODE),
        environment_identity=checks.string(header.get("environmentIdentity"), _CODE),
    )
