"""Session timestamps (milliseconds since the epoch) as dates, for any value a session file may hold.

The v2 format allows any safe integer (up to 2**53 - 1 ms, the year ~287,000) for ``createdAt`` and a fact's
``ts``; ``datetime`` ends with the year 9999. A file from elsewhere — imported, or in a repository you opened — is
valid with such a value, and must not make a listing, a cost report or the index fail: a time past what a date can
hold is shown as the last day a date can hold (and one before 1970 as the epoch).
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["MAX_SHOWN_MS", "local_datetime", "utc_datetime"]

MAX_SHOWN_MS = 253_402_214_400_000
"""9999-12-31T00:00:00Z: the latest time shown; every time zone can still express it as a local date."""


def utc_datetime(ms: float) -> datetime:
    """``ms`` as an aware UTC ``datetime``, clamped to 1970-01-01 … 9999-12-31."""
    return datetime.fromtimestamp(min(max(ms, 0), MAX_SHOWN_MS) / 1000, UTC)


def local_datetime(ms: float) -> datetime:
    """``ms`` in this machine's time zone (aware), clamped as :func:`utc_datetime` is."""
    return utc_datetime(ms).astimezone()
