"""The app's log file: a double-clicked app has no terminal, so warnings and errors go to a rotating file.

The file is ``<user log folder>/tiny-agent-desktop.log`` (:func:`~tiny_agent_core.paths.log_dir`: platformdirs' user
log path, on Linux ``~/.local/state/tiny-agent-desktop/log``; ``$TINY_AGENT_LOG_DIR`` overrides it), at most
:data:`MAX_BYTES` per file with :data:`BACKUPS` older files kept. The level is INFO unless ``$TINY_AGENT_LOG_LEVEL``
says otherwise.

What is logged: start and stop, the versions, errors and warnings of the app and the core. What is never logged:
API keys and prompt or answer text. No code logs them, HTTP client loggers (which print request URLs) are held
at WARNING, and as a second line of defence :class:`RedactingFormatter` masks anything that looks like a key
(``sk-…``, bearer tokens, ``api_key=…``) and the input values pydantic quotes in its validation errors.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
import sys
from pathlib import Path

from tiny_agent_core.paths import log_dir

__all__ = [
    "BACKUPS",
    "LOG_FILE_NAME",
    "LOG_LEVEL_ENV",
    "MAX_BYTES",
    "RedactingFormatter",
    "log_file",
    "redact",
    "setup_logging",
]

LOG_LEVEL_ENV = "TINY_AGENT_LOG_LEVEL"
"""Environment variable with the log file's level name (``DEBUG``, ``INFO``, ``WARNING``…)."""

LOG_FILE_NAME = "tiny-agent-desktop.log"
"""The log file's name inside the log folder."""

MAX_BYTES = 1_000_000
"""Size at which the log file is rotated."""

BACKUPS = 3
"""How many rotated files (``.log.1`` … ``.log.3``) are kept."""

_QUIET_LOGGERS = ("httpx", "httpcore", "hpack", "asyncio", "qasync", "keyring", "urllib3")
"""Third-party loggers held at WARNING: their INFO lines carry request URLs and backend chatter, not app events."""

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(sk|pk|rk|gsk|xai|key)-[A-Za-z0-9_\-]{8,}"), r"\1-<redacted>"),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{8,}"), r"\1 <redacted>"),
    (
        re.compile(
            r"(?i)\b(api[_-]?key|x-api-key|authorization|token|secret|password)(\"?'?\s*[:=]\s*[\"']?)[^\s\"',&]+"
        ),
        r"\1\2<redacted>",
    ),
    (re.compile(r"input_value=.*?, input_type="), "input_value=<redacted>, input_type="),
)


def redact(text: str) -> str:
    """``text`` with anything that looks like a key or a quoted input value masked."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactingFormatter(logging.Formatter):
    """A formatter whose output (message and traceback) passes through :func:`redact`."""

    def format(self, record: logging.LogRecord) -> str:
        """The formatted record, redacted."""
        return redact(super().format(record))


def log_file() -> Path:
    """The current log file (it may not exist yet)."""
    return log_dir() / LOG_FILE_NAME


def _level() -> int:
    name = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
    level = logging.getLevelName(name) if name else logging.INFO
    return level if isinstance(level, int) else logging.INFO


def setup_logging(*, stderr: bool = True) -> Path | None:
    """Log to the rotating file (INFO by default) and warnings to stderr (unless ``stderr`` is false: for a caller
    that prints its own line there); returns the file, or ``None`` when the folder cannot be created (then only
    stderr is used, and a warning says why)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_tiny_agent", False)]:
        root.removeHandler(handler)
        handler.close()
    level = _level()
    root.setLevel(min(level, logging.WARNING))
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))

    if stderr:
        console = logging.StreamHandler(sys.stderr)
        console.setLevel(logging.WARNING)
        console.setFormatter(RedactingFormatter("tiny-agent-gui: %(levelname)s %(name)s: %(message)s"))
        console._tiny_agent = True  # type: ignore[attr-defined]
        root.addHandler(console)

    path = log_file()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True
        )
    except OSError as error:
        logging.getLogger(__name__).warning("no log file (%s): %s", path, error)
        return None
    handler.setLevel(level)
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._tiny_agent = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    return path
