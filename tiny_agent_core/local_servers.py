"""Finding OpenAI-compatible servers already running on this machine (Ollama, LM Studio, llama.cpp, vLLM).

:func:`detect_local_servers` asks each local preset's port on ``127.0.0.1`` for ``GET /v1/models`` at once, with a
short connect/read timeout and a hard deadline per probe, so the whole detection takes well under a second whether
anything answers or not. A server counts as found only when it answers 200 with a model list the core can parse;
a closed port, a timeout, an HTTP error or an HTML page is "not found", never an exception.

:func:`start_command` is what to run when a local preset's server is not running (the window shows it next to a
"connection refused" error).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx

from tiny_agent_core.errors import MalformedResponseError
from tiny_agent_core.providers.locality import is_local_url
from tiny_agent_core.providers.profiles import PRESETS, parse_model_list

__all__ = [
    "LOCAL_PRESETS",
    "PROBE_TIMEOUT",
    "START_COMMANDS",
    "LocalServer",
    "detect_local_servers",
    "local_targets",
    "probe",
    "start_command",
]

LOCAL_PRESETS = ("ollama", "lmstudio", "llamacpp", "vllm")
"""The presets probed, in the order found servers are offered."""

START_COMMANDS: dict[str, str] = {
    "ollama": "ollama serve",
    "lmstudio": "lms server start",
    "llamacpp": "llama-server -m <model.gguf> --port 8080",
    "vllm": "vllm serve <model> --port 8000",
}
"""How each local preset's server is usually started (placeholders in angle brackets)."""

PROBE_TIMEOUT = 0.8
"""Seconds one probe may take in all (connect, send, read the model list)."""

_MAX_BODY = 1_000_000
"""A model list larger than this is not a local server's."""


@dataclass(frozen=True)
class LocalServer:
    """A server that answered ``GET /models`` with a model list."""

    preset_id: str
    """The preset it was probed for (``"ollama"``, ``"lmstudio"``…)."""
    name: str
    """The preset's display name."""
    base_url: str
    """The base URL that answered (``http://127.0.0.1:11434/v1``)."""
    models: tuple[str, ...]
    """The model ids it listed, sorted (may be empty: the server runs but has no model loaded)."""

    @property
    def port(self) -> int:
        """The TCP port it answered on."""
        return urlsplit(self.base_url).port or 80


def start_command(preset_id: str) -> str | None:
    """The usual command that starts the server of a local preset, or ``None`` for other providers."""
    return START_COMMANDS.get(preset_id)


def local_targets(host: str = "127.0.0.1") -> list[tuple[str, str]]:
    """``(preset id, base URL)`` for every local preset, with its host replaced by ``host``."""
    targets: list[tuple[str, str]] = []
    for preset_id in LOCAL_PRESETS:
        preset = PRESETS.get(preset_id)
        if preset is None or not is_local_url(preset.base_url):
            continue
        parts = urlsplit(preset.base_url)
        netloc = f"{host}:{parts.port}" if parts.port else host
        targets.append((preset_id, urlunsplit((parts.scheme, netloc, parts.path, "", ""))))
    return targets


async def probe(
    client: httpx.AsyncClient, preset_id: str, base_url: str, *, seconds: float = PROBE_TIMEOUT
) -> LocalServer | None:
    """The server at ``base_url`` if it answers ``GET <base_url>/models`` with a model list within ``seconds``
    , else ``None`` (refused, silent, an error status, not a model list)."""
    preset = PRESETS.get(preset_id)
    name = preset.name if preset is not None else preset_id
    try:
        body = await asyncio.wait_for(_models_body(client, base_url, seconds), seconds)
        models = parse_model_list(body) if body is not None else None
    except (httpx.HTTPError, MalformedResponseError, TimeoutError, OSError, UnicodeError):
        return None
    if models is None:
        return None
    return LocalServer(preset_id, name, base_url, tuple(models))


async def _models_body(client: httpx.AsyncClient, base_url: str, seconds: float) -> bytes | None:
    request = client.build_request("GET", f"{base_url}/models", timeout=httpx.Timeout(seconds))
    response = await client.send(request, stream=True)
    try:
        if response.status_code != 200:
            return None
        parts: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > _MAX_BODY:
                return None
            parts.append(chunk)
        return b"".join(parts)
    finally:
        await response.aclose()


async def detect_local_servers(
    client: httpx.AsyncClient,
    targets: Iterable[tuple[str, str]] | None = None,
    *,
    seconds: float = PROBE_TIMEOUT,
) -> list[LocalServer]:
    """Probe ``targets`` (default: :func:`local_targets`) concurrently; the servers that answered, in target order.

    Bounded: returns within about ``seconds`` however many targets there are.
    """
    chosen: Sequence[tuple[str, str]] = list(targets) if targets is not None else local_targets()
    found = await asyncio.gather(*(probe(client, preset, url, seconds=seconds) for preset, url in chosen))
    return [server for server in found if server is not None]
