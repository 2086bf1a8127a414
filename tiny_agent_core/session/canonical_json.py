"""Canonical JSON and ``sha256:`` digests, as the reference computes them (reference notes §5.8).

The reference's ``canonicalJson`` is the RFC 8785 (JCS) subset: object keys sorted by UTF-16 code units, array
order kept, no whitespace, strings escaped like ``JSON.stringify`` (``\\" \\\\ \\b \\t \\n \\f \\r``, other C0
controls as ``\\u00xx``, everything else raw), numbers as JavaScript prints them, and a lone surrogate anywhere is
an error. A digest is ``"sha256:" + hex(sha256(utf8(canonical)))``.

:func:`canonical_json` uses the ``rfc8785`` library, which implements exactly these rules for every value a JSON
parser can produce, with one difference: integers beyond ±(2^53 − 1) are refused (``CanonicalJsonError``), where
JavaScript would print the rounded double. No session value the reducer digests contains a number.

The reducer digests configuration snapshots and compaction sources on every load, so it uses
:func:`fast_canonical_json`: the C-accelerated ``json.dumps(sort_keys=True)`` gives the same bytes whenever no
float is involved and no object key contains a character at or above U+E000 (the only place where code-point
order and UTF-16 order disagree); otherwise it falls back to ``rfc8785``. Both are tested for equality.

:func:`js_numbers` maps what ``JSON.parse`` reads as ±Infinity (``1e400``, a 5,000-digit integer) to ``null``,
as ``JSON.stringify`` writes it: free-form tool arguments are the only session values that can hold one.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

__all__ = [
    "CanonicalJsonError",
    "canonical_digest",
    "canonical_json",
    "digest_text",
    "fast_canonical_json",
    "js_numbers",
]

_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False).encode
_HIGH_CHAR = re.compile("[\ue000-\U0010ffff]")
_SAFE = 2**53 - 1


class CanonicalJsonError(ValueError):
    """The value has no canonical JSON form (a lone surrogate, a non-JSON type, an out-of-range number)."""


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (dicts, lists, tuples, str, int, float, bool, None)."""
    import rfc8785  # on first use: loading a session that holds no float never needs it

    try:
        return rfc8785.dumps(value).decode("utf-8")
    except (rfc8785.CanonicalizationError, UnicodeError, TypeError, RecursionError) as error:
        raise CanonicalJsonError(f"no canonical JSON form: {error}") from error


def _plain(value: Any, depth: int = 0) -> bool:
    """True when ``value`` holds no float, no unsafe integer and no non-str key (the fast path is exact)."""
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return True
    if kind is int:
        return bool(-_SAFE <= value <= _SAFE)
    if kind is dict:
        return all(type(key) is str and _plain(item) for key, item in value.items())
    if kind is list or kind is tuple:
        return all(_plain(item) for item in value)
    return False


def fast_canonical_json(value: Any, *, checked: bool = False) -> str:
    """Same result as :func:`canonical_json`, faster for the string-only values sessions digest.

    ``checked=True`` promises what the reducer has already validated: ``value`` holds only str/None/bool/safe
    int/list/dict, every key is ASCII and no string holds a lone surrogate. That skips every check.
    """
    if checked:
        text: str = _DUMPS(value)
        return text
    if not _plain(value):
        return canonical_json(value)
    try:
        text = _DUMPS(value)
    except (TypeError, ValueError, RecursionError) as error:  # pragma: no cover - excluded by the walk
        raise CanonicalJsonError(f"no canonical JSON form: {error}") from error
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise CanonicalJsonError("invalid Unicode scalar string") from error
        if _HIGH_CHAR.search(text):
            # Key order may differ between code points and UTF-16 units: let rfc8785 decide.
            return canonical_json(value)
    return text


def digest_text(canonical: str) -> str:
    """``sha256:<hex>`` of a canonical JSON text."""
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def canonical_digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value`` (the reference's ``canonicalDigest``)."""
    return digest_text(fast_canonical_json(value))


def _fits_double(number: int | float) -> bool:
    if type(number) is float:
        return math.isfinite(number)
    try:
        return math.isfinite(float(number))
    except OverflowError:
        return False


def js_numbers(value: Any) -> Any:
    """A copy of the JSON value ``value`` in which every number that does not fit a double (±inf, NaN, an integer
    beyond ±1.8e308) is ``None``, as ``JSON.stringify`` prints it: what :mod:`json` then writes is always JSON.
    """
    kind = type(value)
    if kind is float or kind is int:
        return value if _fits_double(value) else None
    if kind is dict:
        return {key: js_numbers(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [js_numbers(item) for item in value]
    return value
