"""Whether a provider's base URL points at a server on this machine or the local network (Ollama, LM Studio,
llama.cpp, vLLM on a GPU box…), where requests carry no API charge and cost is the user's own to set.

Only the URL's host is looked at, never a DNS answer (no blocking lookup): loopback and private addresses (IPv4
and IPv6), ``localhost`` and ``*.localhost``, and mDNS ``*.local`` names are local; everything else is not.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["is_local_url"]

_LOCAL_SUFFIXES = (".localhost", ".local")


def is_local_url(base_url: str) -> bool:
    """True when ``base_url``'s host is this machine or a private-network address (see the module docstring)."""
    try:
        host = urlsplit(base_url.strip()).hostname
    except ValueError:
        return False
    if not host:
        return False
    host = host.rstrip(".").lower()
    if host == "localhost" or host.endswith(_LOCAL_SUFFIXES):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_private or address.is_link_local
