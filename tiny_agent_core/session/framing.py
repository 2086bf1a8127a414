"""Byte-level framing of a v2 session file and the strict JSON reading of one line (reference notes §5.3).

The committed prefix is everything up to and including the last LF; bytes after it are a torn tail and are
ignored. Checks, in the reference's order, each raising :class:`SessionCorruption`:

1. no LF at all → ``MISSING_HEADER`` (line 1);
2. raw UTF-8-encoded surrogates (``ED A0..BF xx``) → ``MALFORMED_JSON`` at their physical line;
3. the prefix is not strict UTF-8 → ``INVALID_UTF8`` (line 1). A leading byte-order mark is dropped, as the
   reference's ``TextDecoder`` does;
4. an empty first line → ``MISSING_HEADER``; an empty line → ``BLANK_LINE``; a line ending in CR →
   ``CRLF_NOT_ALLOWED``;
5. the line is not strict JSON → ``MALFORMED_JSON``: invalid syntax, trailing garbage, duplicate object keys at
   any depth, an escaped lone surrogate, raw control characters in strings, ``NaN``/``Infinity``.

Numbers follow JavaScript: an integer too long for Python's digit limit reads as a float (``inf`` when huge),
like ``JSON.parse`` does, instead of failing.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from typing import Any

from tiny_agent_core.errors import SessionCorruption

__all__ = [
    "ESCAPED_SURROGATE",
    "check_committed",
    "committed_length",
    "has_surrogate",
    "next_escaped_surrogate",
    "parse_js_json",
    "parse_line",
    "parse_line_bytes",
    "raw_surrogate_line",
    "require_header_line",
    "strip_bom",
]

_RAW_SURROGATE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")
ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
"""Matches a JSON ``\\uD800``–``\\uDFFF`` escape: a cheap test before :func:`has_surrogate` on the parsed value."""
_ESCAPED_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_CHAR = re.compile("[\ud800-\udfff]")
_BOM = "\ufeff"
_CHUNK = 1 << 22


class _Malformed(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Malformed("duplicate key")
    return result


def _constant(name: str) -> Any:
    raise _Malformed(name)


def _js_int(text: str) -> int | float:
    # JSON.parse reads every number as a double; Python refuses int() of more than 4300 digits.
    return int(text) if len(text) < 4000 else float(text)


_strict = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant)
_decode = _strict.decode
_scan: Callable[[str, int], tuple[Any, int]] = _strict.scan_once  # type: ignore[attr-defined]  # C scanner, untyped
_decode_long = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant, parse_int=_js_int).decode


def has_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value holds a surrogate code point in any key or string (after parsing, every
    surrogate is a lone one: the decoder joins escaped pairs). Iterative, so any depth the parser accepted works."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and _SURROGATE_CHAR.search(item) is not None:
                return True
        elif kind is dict:
            stack.extend(item)
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return False


def committed_length(data: bytes) -> int:
    """Length of the committed prefix (the reference's ``repairedLength``); ``MISSING_HEADER`` if no LF."""
    last = data.rfind(b"\n")
    if last < 0:
        raise SessionCorruption("MISSING_HEADER", 1)
    return last + 1


def raw_surrogate_line(data: bytes | memoryview, end: int, first_line: int = 1) -> int | None:
    """The physical line of the first raw surrogate in ``data[:end]``, or ``None``."""
    found = _RAW_SURROGATE.search(data, 0, end)
    if found is None:
        return None
    return first_line + bytes(data[: found.start()]).count(b"\n")


def check_committed(data: bytes, end: int) -> None:
    """Check ``data[:end]`` for raw surrogates (``MALFORMED_JSON`` at their line) and strict UTF-8
    (``INVALID_UTF8``, line 1), in that order, without building one big string.
    """
    line = raw_surrogate_line(data, end)
    if line is not None:
        raise SessionCorruption("MALFORMED_JSON", line)
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    view = memoryview(data)
    try:
        for offset in range(0, end, _CHUNK):
            decoder.decode(view[offset : min(end, offset + _CHUNK)], offset + _CHUNK >= end)
    except UnicodeDecodeError:
        raise SessionCorruption("INVALID_UTF8", 1) from None


def require_header_line(data: bytes, name: str) -> None:
    """Raise ``MISSING_HEADER`` (line 1, the reducer's verdict) with a message a user can act on when ``data``, the
    bytes of session file ``name``, has no complete line: a creation that never finished.

    Versions before atomic creation could leave such a file (0 bytes, or part of the header) when the disk filled
    up while a session was created. It holds no session data; it is safe to delete, and nothing else repairs it.
    """
    if b"\n" not in data:
        raise SessionCorruption(
            "MISSING_HEADER",
            1,
            message=(
                f"Session file {name} has no complete line ({len(data)} bytes), so it holds no session data: "
                "its creation never finished (e.g. the disk was full). It can be deleted."
            ),
        )


def strip_bom(first_line: str) -> str:
    """The first line without a leading byte-order mark (the reference's ``TextDecoder`` drops it)."""
    return first_line[1:] if first_line.startswith(_BOM) else first_line


def next_escaped_surrogate(data: bytes, start: int, end: int) -> int:
    """Where the next ``\\uD800``–``\\uDFFF`` escape in ``data[start:end]`` begins (``end`` if none).

    One regex pass over a whole file's bytes finds them ~3× faster than looking for ``\\u`` in every line (JSON
    text is full of other backslashes), so a reader asks it which lines can hold one and passes
    ``may_hold_surrogate=False`` to :func:`parse_line` for the others.
    """
    found = _ESCAPED_SURROGATE_BYTES.search(data, start, end)
    return end if found is None else found.start()


def _parse_long_numbers(source: str, line: int) -> Any:
    """Parse a line with an integer too long for Python's digit limit, reading it like JavaScript does."""
    try:
        return _decode_long(source)
    except (ValueError, RecursionError):
        raise SessionCorruption("MALFORMED_JSON", line) from None


def parse_line(source: str, line: int, *, may_hold_surrogate: bool = True) -> Any:
    """Parse one physical line (without its LF) as strict JSON; ``SessionCorruption`` on any violation.

    ``may_hold_surrogate=False`` promises that the line has no ``\\uD800``–``\\uDFFF`` escape (see
    :func:`next_escaped_surrogate`), which skips the search for a lone surrogate.
    """
    if not source:
        raise SessionCorruption("BLANK_LINE", line)
    if source[-1] == "\r":
        raise SessionCorruption("CRLF_NOT_ALLOWED", line)
    try:
        try:
            value, end = _scan(source, 0)  # a line that is exactly one value (what writers write): the C scanner
        except StopIteration:
            end = -1
        if end != len(source):  # anything else (whitespace around, trailing garbage): the whole decoder's verdict
            value = _decode(source)
    except (_Malformed, json.JSONDecodeError, RecursionError):
        raise SessionCorruption("MALFORMED_JSON", line) from None
    except ValueError:  # Python's integer digit limit
        value = _parse_long_numbers(source, line)
    if may_hold_surrogate and "\\u" in source and ESCAPED_SURROGATE.search(source) is not None and has_surrogate(value):
        raise SessionCorruption("MALFORMED_JSON", line)
    return value


def parse_line_bytes(raw: bytes, line: int) -> Any:
    """Parse one line given as bytes (no LF), with the byte-level checks of a whole file applied to it.

    Raw surrogates give ``MALFORMED_JSON`` at ``line``; invalid UTF-8 gives ``INVALID_UTF8`` at line 1, as the
    reducer reports it for the whole file.
    """
    if _RAW_SURROGATE.search(raw) is not None:
        raise SessionCorruption("MALFORMED_JSON", line)
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SessionCorruption("INVALID_UTF8", 1) from None
    return parse_line(source, line)


_decode_js = json.JSONDecoder(parse_constant=_constant, parse_int=_js_int).decode


def parse_js_json(text: str) -> Any:
    """Parse like JavaScript's ``JSON.parse`` (lenient: duplicate keys keep the last value, lone surrogates
    pass); raises ``ValueError`` where it would throw. Used for tool-call argument text, as the reference does.
    """
    try:
        return _decode_js(text)
    except RecursionError as error:
        raise ValueError("JSON nested too deeply") from error
