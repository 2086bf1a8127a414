"""The reusable HTTP-error pieces every API kind builds its errors from: status mapping, retry-after, overflow."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiny_agent_core.errors import (
    AuthenticationError,
    ContextLengthError,
    ModelNotFoundError,
    PaymentRequiredError,
    ProviderHTTPError,
    RateLimitError,
    ServerError,
)
from tiny_agent_core.providers.http_errors import (
    CONTEXT_ADVICE,
    context_length_error,
    error_message,
    is_context_overflow,
    retry_after_body,
    retry_after_header,
    status_error,
)

STATUSES = st.integers(min_value=400, max_value=599)


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, ProviderHTTPError),
        (401, AuthenticationError),
        (402, PaymentRequiredError),
        (403, AuthenticationError),
        (404, ModelNotFoundError),
        (408, RateLimitError),
        (429, RateLimitError),
        (500, ServerError),
        (529, ServerError),
    ],
)
def test_status_error_types_each_status_and_says_what_to_do(status: int, cls: type[ProviderHTTPError]) -> None:
    error = status_error(status, "the detail", body="{}", retry_after=None)
    assert type(error) is cls
    assert (error.status, error.body, error.retry_after) == (status, "{}", None)
    message = str(error)
    assert message.startswith(f"HTTP {status}: the detail — ")
    assert len(message) > len(f"HTTP {status}: the detail — ")


def test_a_rate_limit_with_a_retry_after_says_when() -> None:
    error = status_error(429, "slow down", body="", retry_after=2.5)
    assert isinstance(error, RateLimitError)
    assert str(error).endswith("Retry in 2.5 s.")
    assert status_error(500, "x", body="", retry_after=3.0).retry_after == 3.0


@given(STATUSES, st.text(max_size=200), st.one_of(st.none(), st.floats(min_value=0, max_value=1e6)))
def test_status_error_always_gives_a_typed_error_with_its_status(status: int, detail: str, after: float | None) -> None:
    error = status_error(status, detail, body=detail, retry_after=after)
    assert isinstance(error, ProviderHTTPError)
    assert error.status == status
    assert error.kind == "http_error"


@given(st.dictionaries(st.sampled_from(["Retry-After", "retry-after-ms", "Date", "X"]), st.text(max_size=40)))
def test_retry_after_header_is_never_negative_and_never_raises(headers: dict[str, str]) -> None:
    value = retry_after_header(headers)
    assert value is None or value >= 0


@given(st.text(max_size=300))
def test_retry_after_body_never_raises(text: str) -> None:
    value = retry_after_body(None, text)
    assert value is None or value >= 0


def test_retry_after_body_reads_openrouter_availability_first() -> None:
    assert retry_after_body({"error": {"availability": {"retry_after": 12}}}, "try again in 3s") == 12.0
    assert retry_after_body({"error": {"availability": {"retry_after": -1}}}, "try again in 3s") == 3.0


@pytest.mark.parametrize(
    ("status", "detail", "expected"),
    [
        (400, "This model's maximum context length is 8192 tokens", True),
        (413, "prompt is too long: 210000 tokens > 200000 maximum", True),
        (500, "the request exceeds the available context size", True),
        (429, "maximum context length", False),
        (400, "invalid model", False),
    ],
)
def test_context_overflow_is_recognised_by_status_and_text(status: int, detail: str, expected: bool) -> None:
    assert is_context_overflow(status, detail) is expected


def test_a_context_length_error_ends_with_the_way_out_and_the_window() -> None:
    error = context_length_error("HTTP 400: too long", status=400, body="b", context_length=8192)
    assert isinstance(error, ContextLengthError)
    assert error.context_length == 8192
    assert "(8,192 tokens)" in str(error)
    assert str(error).startswith("HTTP 400: too long — ")
    assert CONTEXT_ADVICE.split(":")[-1].strip() in str(error)


def test_error_message_finds_the_useful_text() -> None:
    assert error_message("plain") == "plain"
    assert error_message({"error": {"message": "nested"}}) == "nested"
    wrapped = {"message": "Provider returned error", "metadata": {"provider_name": "Up", "raw": "real reason"}}
    assert error_message(wrapped) == "Provider returned error (real reason) [upstream: Up]"
