"""Timeouts and the one place where httpx transport exceptions become typed provider errors (SPEC §9).

Every network wait has a timeout (:class:`Timeouts`), and every httpx failure leaves the core as a
:class:`~tiny_agent_core.errors.ProviderTimeoutError`, :class:`~tiny_agent_core.errors.ProviderConnectionError`
or :class:`~tiny_agent_core.errors.MalformedResponseError` whose message names the base URL and says what to
check. Nothing is retried here: the window offers Retry.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

from tiny_agent_core.errors import MalformedResponseError, ProviderConnectionError, ProviderTimeoutError


@dataclass(frozen=True)
class Timeouts:
    """Per-request timeouts in seconds."""

    connect: float = 10.0
    """Establishing the TCP (and TLS) connection."""
    read: float = 120.0
    """The longest wait for any byte: a stream that stalls longer than this fails."""
    write: float = 30.0
    """Sending the request body."""
    pool: float = 10.0
    """Waiting for a free connection in the client's pool."""

    def to_httpx(self) -> httpx.Timeout:
        """The equivalent :class:`httpx.Timeout`."""
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.pool)


def _reason(error: Exception) -> str:
    text = str(error).strip()
    if not text and error.__context__ is not None:
        text = str(error.__context__).strip()
    return text or type(error).__name__


@contextmanager
def translate_transport_errors(base_url: str, timeouts: Timeouts) -> Iterator[None]:
    """Turn httpx exceptions raised inside the block into typed provider errors with actionable messages."""
    try:
        yield
    except httpx.ConnectTimeout as error:
        raise ProviderTimeoutError(
            f"Could not connect to {base_url} within {timeouts.connect:g} s. "
            "Is the server running and reachable from this machine (network, VPN, proxy)?"
        ) from error
    except httpx.ReadTimeout as error:
        raise ProviderTimeoutError(
            f"{base_url} sent nothing for {timeouts.read:g} s, so the request was abandoned. "
            "The server may be overloaded or still loading the model; retry, or allow a longer read timeout."
        ) from error
    except httpx.WriteTimeout as error:
        raise ProviderTimeoutError(
            f"Sending the request to {base_url} took longer than {timeouts.write:g} s. "
            "Check your connection; a very large conversation may need a longer write timeout."
        ) from error
    except httpx.PoolTimeout as error:
        raise ProviderTimeoutError(
            f"No free connection to {base_url} within {timeouts.pool:g} s: too many requests are running at once."
        ) from error
    except httpx.ConnectError as error:
        raise ProviderConnectionError(
            f"Could not connect to {base_url}: {_reason(error)}. "
            "Is the server running, and is the base URL (host and port) right?"
        ) from error
    except httpx.RemoteProtocolError as error:
        raise ProviderConnectionError(
            f"The connection to {base_url} closed before the response completed ({_reason(error)}). "
            "Retry; if it keeps happening, the server or a proxy is cutting responses short."
        ) from error
    except (httpx.ReadError, httpx.WriteError, httpx.CloseError) as error:
        raise ProviderConnectionError(
            f"The connection to {base_url} failed before the response completed ({_reason(error)}). "
            "Check your network and retry."
        ) from error
    except httpx.DecodingError as error:
        raise MalformedResponseError(
            f"The response from {base_url} could not be decoded ({_reason(error)})."
        ) from error
    except httpx.LocalProtocolError as error:  # its text can quote a header value, i.e. the key: never shown
        raise ProviderConnectionError(
            f"The request to {base_url} could not be sent: a header or the base URL is not valid HTTP. "
            "Check the base URL and paste the API key again."
        ) from error
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as error:
        raise ProviderConnectionError(
            f"The base URL {base_url!r} cannot be used: {_reason(error)}. "
            "It should look like https://api.example.com/v1 or http://localhost:11434/v1."
        ) from error
    except (httpx.TransportError, httpx.TooManyRedirects) as error:
        raise ProviderConnectionError(f"The request to {base_url} failed: {_reason(error)}.") from error
