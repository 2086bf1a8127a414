"""Masking known secrets in text that will be persisted, shown or sent (the way CI systems mask secrets in logs).

A :class:`Redactor` holds the secrets this process knows — the provider key of a run, and the values of
environment variables whose names look like secrets — and replaces every spelling of them a tool, a provider
error or a shell might produce (as is, trimmed, Python-escaped, JSON-escaped) with :data:`REDACTED`.

Secrets shorter than :data:`MIN_SECRET_LENGTH` characters are not masked: masking every ``ab`` in a tool's output
would make it unreadable and protect nothing a real key needs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "Redactor", "environment_secrets", "masks_variable"]

REDACTED = "[redacted]"
"""What a masked secret reads as."""

MIN_SECRET_LENGTH = 6
"""Secrets shorter than this are not masked (they would mask ordinary words)."""


def _spellings(secret: str) -> set[str]:
    """The forms ``secret`` takes in text: as is, trimmed, and escaped for Python and JSON string literals."""
    forms = {secret, secret.strip(), repr(secret)[1:-1], json.dumps(secret)[1:-1], json.dumps(secret.strip())[1:-1]}
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}


_SECRET_NAME = re.compile(
    r"(?:^|[_\W])(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|COOKIE)(?:$|[_\W])|APIKEY|TOKEN|SECRET|PASSWORD",
    re.IGNORECASE,
)


def masks_variable(name: str) -> bool:
    """True when the value of the environment variable ``name`` is masked in output: names that certainly hold a
    secret (``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``DB_PASSWORD``, ``aws_secret_access_key``, ``SESSION_COOKIE`` …;
    not ``PWD``, ``KEYBOARD`` or ``XDG_SESSION_TYPE``). Narrower than
    :func:`tiny_agent_core.tools.environment.looks_secret`, which keeps anything that *might* be a secret out of a
    child's environment: masking an ordinary value such as ``wayland`` would garble output and protect nothing."""
    return _SECRET_NAME.search(name) is not None


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the variables in ``environ`` (default: this process's) whose names look like secrets."""
    source = os.environ if environ is None else environ
    return [value for name, value in source.items() if masks_variable(name) and value.strip()]


class Redactor:
    """Replaces every known secret in a text with :data:`REDACTED`; longer secrets first, so a key that contains
    another is masked whole."""

    __slots__ = ("_forms",)

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if secret:
                forms |= _spellings(secret)
        self._forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        """``text`` with every known secret masked."""
        for form in self._forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text

    def __bool__(self) -> bool:
        return bool(self._forms)

    def __repr__(self) -> str:  # never show the secrets themselves
        return f"Redactor({len(self._forms)} spellings)"
