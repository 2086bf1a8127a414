"""Local provider URLs: this machine and private networks, by the host alone."""

from __future__ import annotations

import pytest

from tiny_agent_core.providers.locality import is_local_url


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8089/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://192.168.1.20:1234/v1", True),
        ("http://10.0.0.5:8000/v1", True),
        ("http://172.16.3.4/v1", True),
        ("http://gpu-box.local:8000/v1", True),
        ("http://[::ffff:127.0.0.1]:80/v1", True),
        ("http://[fe80::1%25eth0]:80/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://openrouter.ai/api/v1", False),
        ("http://8.8.8.8/v1", False),
        ("http://[::1/v1", False),
        ("not a url", False),
        ("", False),
    ],
)
def test_local_urls(url: str, local: bool) -> None:
    assert is_local_url(url) is local
