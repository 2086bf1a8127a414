"""Loading the recorded provider cases of ../shared/wire/cases as (kind, status, bytes) for the adapter."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class WireCase:
    """One recorded case: what the adapter would receive from the network."""

    name: str
    kind: str
    """``response``, ``sse`` or ``error``."""
    status: int | None
    """The recorded HTTP status; ``None`` when the recorder did not keep it."""
    data: bytes
    """The body (JSON) or the SSE text, framed as it would arrive on the wire."""
    headers: dict[str, str]
    raw: dict[str, Any]

    @property
    def stream(self) -> bool:
        """True for SSE cases."""
        return self.kind == "sse"


def sse_from_jsonl(text: str) -> str:
    """Re-frame a ``jsonl`` recording (data framing and [DONE] stripped by the recorder) as SSE."""
    return "".join(f"data: {line}\n\n" for line in text.splitlines() if line.strip()) + "data: [DONE]\n\n"


def load_case(path: Path) -> WireCase:
    """Read one case file."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if raw["kind"] == "sse":
        text = raw["sse"]
        if raw.get("sse_format") == "jsonl":
            text = sse_from_jsonl(text)
        data = text.encode("utf-8")
    else:
        data = json.dumps(raw["body"], ensure_ascii=False).encode("utf-8")
    return WireCase(path.stem, raw["kind"], raw.get("http_status"), data, raw.get("headers") or {}, raw)
