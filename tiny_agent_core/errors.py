"""The one error hierarchy of ``tiny_agent_core``.

Every failure the core reports is a :class:`TinyAgentError`; callers (the CLI, the window) catch that and
show ``str(error)``, which is always a sentence a user can act on::

    TinyAgentError
    ├── TranscriptError            a role invariant of the canonical transcript would break
    ├── ProviderError              anything a provider sent (or failed to send); ``kind`` names the class
    │   ├── MalformedResponseError     framing, JSON or shape the seam cannot accept        kind "malformed"
    │   │   ├── InvalidAssistantMessage    the normalization seam rejected the message
    │   │   ├── ResponseTooLargeError      the response exceeded a size limit (``limit``); it was not read further
    │   │   └── EmptyStreamError           a 200 stream that ended before its first event
    │   ├── ContentFilteredError       the provider filtered or refused the output          kind "content_filter"
    │   ├── EmptyResponseError         the model answered with no text and no tool call       kind "empty_response"
    │   ├── ProviderReportedError      an ``error`` object / ``finish_reason: error`` in 2xx kind "provider_error"
    │   ├── ProviderHTTPError          HTTP status >= 400                                     kind "http_error"
    │   │   ├── AuthenticationError        401 / 403
    │   │   ├── PaymentRequiredError       402
    │   │   ├── ModelNotFoundError         404
    │   │   ├── RateLimitError             408 / 429 (``retry_after`` when known)
    │   │   ├── ContextLengthError         the prompt does not fit the model's context window    kind "context_length"
    │   │   └── ServerError                5xx
    │   ├── ProviderConfigurationError the request cannot be built (e.g. a key HTTP cannot carry) kind "configuration"
    │   ├── ProviderTimeoutError       connect, read or whole-request timeout                 kind "timeout"
    │   └── ProviderConnectionError    refused, reset, or closed before the response completed kind "connection"
    ├── SessionError               the session store or its files
    │   ├── SessionCorruption          the strict reducer rejected the bytes (reference code, line, seq)
    │   ├── TransactionRejectedError   the store refused to append a transaction (nothing was written)
    │   ├── SessionLockedError         the session is open for writing elsewhere
    │   ├── SessionChangedError        another program wrote to the file while the app held it for writing
    │   └── SessionTooLargeError       the file is larger than the app opens, or an append would make it so
    ├── LedgerError                the SQLite index / ledger
    │   └── LedgerVersionError         the database was written by a newer, incompatible version of the app
    ├── AgentError                 the agent loop
    │   ├── AgentBusyError             an operation is already running, or the session has an unfinished one
    │   ├── UnknownSkillError          ``/skill:<name>`` names no skill of the workspace
    │   └── RecoveryBlockedError       crash recovery cannot continue safely (``reason``); the user must choose
    ├── ToolError                  a tool refused or failed; its message is the model-facing ``Error: …`` text
    │   └── PathOutsideWorkspace       a file tool's path resolves outside the workspace (tools/guard.py)
    ├── ToolAborted                a tool execution was cut short by cancel; its effects are unknown
    ├── SettingsError              the settings file (settings.py) or a profile in it
    │   ├── SettingsFileError          the file is unreadable, not JSON or invalid (defaults are used)
    │   └── SettingsVersionError       the file was written by a newer version of the app (left unchanged)
    └── SecretStoreError           the OS keyring failed (locked, refused, broken) (secrets.py)
        └── KeyringUnavailableError    there is no usable OS keyring on this system

``ProviderError.usage`` carries usage already parsed when a response was rejected after its usage was read, so
the caller can still record what the request cost (the reference persists it with ``stepFailed``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from tiny_agent_core.usage import Usage


class TinyAgentError(Exception):
    """Base of every error raised by ``tiny_agent_core``."""


class TranscriptError(TinyAgentError):
    """Appending a message would break a role invariant of the canonical transcript.

    ``invariant`` is a stable machine name of the broken rule, e.g. ``"tool_call_pending"``.
    """

    def __init__(self, invariant: str, message: str) -> None:
        super().__init__(message)
        self.invariant = invariant


class ProviderError(TinyAgentError):
    """A provider response could not be turned into a canonical result."""

    kind: ClassVar[str] = "provider_error"

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage


class MalformedResponseError(ProviderError):
    """The bytes are not a well-formed Chat Completions response or stream."""

    kind: ClassVar[str] = "malformed"


class InvalidAssistantMessage(MalformedResponseError):
    """The normalization seam rejected the provider's assistant message (reference notes §2)."""


class ResponseTooLargeError(MalformedResponseError):
    """The response exceeded one of the adapter's size limits and was refused without being read further.

    ``limit`` is the limit that was exceeded (bytes, or tool calls per message). No real provider response comes
    near the defaults: it is a broken or hostile server, or a base URL that does not point at a Chat Completions API.
    """

    def __init__(self, message: str, *, limit: int, usage: Usage | None = None) -> None:
        super().__init__(message, usage=usage)
        self.limit = limit


class EmptyStreamError(MalformedResponseError):
    """A streamed response was accepted (2xx) but ended before any event arrived.

    llama-cpp-python answers a streamed request with ``tool_choice: "auto"`` this way (it cannot stream automatic
    tool choice); the client then resends the request without streaming (outbound repair ``tools_not_streamed``).
    """


class EmptyResponseError(ProviderError):
    """The model answered with neither text nor a tool call (a blank answer is not an answer)."""

    kind: ClassVar[str] = "empty_response"


class ContentFilteredError(ProviderError):
    """The provider filtered the prompt or the output, or the model refused."""

    kind: ClassVar[str] = "content_filter"


class ProviderReportedError(ProviderError):
    """The provider reported an error inside a successful (2xx) body or stream."""

    kind: ClassVar[str] = "provider_error"


class ProviderHTTPError(ProviderError):
    """The provider answered with an HTTP error status.

    ``retry_after`` is in seconds when the headers or the body said when to retry.
    """

    kind: ClassVar[str] = "http_error"

    def __init__(
        self,
        message: str,
        *,
        status: int,
        body: str = "",
        retry_after: float | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message, usage=usage)
        self.status = status
        self.body = body
        self.retry_after = retry_after


class AuthenticationError(ProviderHTTPError):
    """401/403: the key is missing, wrong, or lacks access."""


class PaymentRequiredError(ProviderHTTPError):
    """402: the account has no credit left."""


class ModelNotFoundError(ProviderHTTPError):
    """404: the model (or the endpoint) does not exist for this provider."""


class RateLimitError(ProviderHTTPError):
    """408/429: too many requests or tokens; retry later."""


class ContextLengthError(ProviderHTTPError):
    """The prompt (with the room asked for the answer) does not fit the model's context window.

    Retrying the same request fails the same way: the way out is a shorter context (compact the session) or a new
    session. ``context_length`` is the window in tokens when the provider or the profile said it.
    """

    kind: ClassVar[str] = "context_length"

    def __init__(
        self,
        message: str,
        *,
        status: int,
        body: str = "",
        context_length: int | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message, status=status, body=body, usage=usage)
        self.context_length = context_length


class ServerError(ProviderHTTPError):
    """5xx: the provider failed."""


class ProviderConfigurationError(ProviderError):
    """The request cannot be built from the provider settings, e.g. an API key with characters HTTP cannot carry."""

    kind: ClassVar[str] = "configuration"


class ProviderTimeoutError(ProviderError):
    """The provider did not connect, stopped sending, or did not finish within the request's deadline."""

    kind: ClassVar[str] = "timeout"


class ProviderConnectionError(ProviderError):
    """The connection failed or closed before the response completed."""

    kind: ClassVar[str] = "connection"


class SessionError(TinyAgentError):
    """A session file could not be created, opened, read or appended to."""


class SessionCorruption(SessionError):
    """The strict reducer rejected a session file.

    ``code`` is one of the reference's corruption codes (``MALFORMED_JSON``, ``SEQ_MISMATCH``, …), ``line`` the
    1-based physical line, ``seq`` the fact sequence number when known.
    """

    def __init__(self, code: str, line: int, seq: int | None = None, message: str | None = None) -> None:
        super().__init__(message or code)
        self.code = code
        self.line = line
        self.seq = seq


class TransactionRejectedError(SessionError):
    """The store refused a transaction because the reducer would reject the file with it appended.

    Nothing was written and the store's state is unchanged. ``code``/``line``/``seq`` are what the reducer
    would report (a reference corruption code such as ``INVALID_TRANSITION``).
    """

    def __init__(self, code: str, line: int, seq: int | None = None) -> None:
        where = f"line {line}" + (f", seq {seq}" if seq is not None else "")
        super().__init__(f"Session transaction rejected: {code} ({where}); nothing was written.")
        self.code = code
        self.line = line
        self.seq = seq


class SessionLockedError(SessionError):
    """The session is open for writing in another window or process; it can still be read."""


class SessionChangedError(SessionError):
    """The session file changed under the app while it held it open for writing: another program (a tiny-agent
    CLI, which takes no lock) wrote to it. Nothing more is written through this store; reopen the session."""


class SessionTooLargeError(SessionError):
    """The session file is larger than the app opens (``SESSION_FILE_MAX`` in ``session/store.py``), or an append
    would make it so."""


class LedgerError(TinyAgentError):
    """The SQLite index and ledger could not be opened, migrated or written."""


class LedgerVersionError(LedgerError):
    """The index database was written by a newer version of the app with an incompatible schema.

    ``found`` is the database's schema major version, ``supported`` the newest major this app understands.
    """

    def __init__(self, message: str, *, found: int, supported: int) -> None:
        super().__init__(message)
        self.found = found
        self.supported = supported


class AgentError(TinyAgentError):
    """The agent loop could not start or continue an operation."""


class AgentBusyError(AgentError):
    """An operation is already running in this agent, or the session holds an unfinished one."""


class StepLimitError(AgentError):
    """A run reached its limit of model steps (``Agent.max_steps``) and was stopped; a new prompt goes on."""

    kind: ClassVar[str] = "step_limit"


class UnknownSkillError(AgentError):
    """``/skill:<name>`` names no skill of the workspace (or its file can no longer be read)."""


class RecoveryBlockedError(AgentError):
    """Crash recovery stopped: continuing could repeat or misattribute work (reference notes §5.11).

    ``reason`` is the planner's: ``configuration_changed``, ``environment_changed``, ``replay_declaration_changed``
    or ``attempts_exhausted``; ``differences`` says what changed, when known. The two ways out are to restore the
    configuration the session was running with (model, tools, workspace) and recover again, or to abort the
    unfinished operation.
    """

    EXPLANATIONS: ClassVar[dict[str, str]] = {
        "configuration_changed": "the model, system prompt or tools differ from those the interrupted step used",
        "environment_changed": "the workspace (environment identity) differs from the one the session was started in",
        "replay_declaration_changed": "a tool that was safe to replay is no longer declared the same way",
        "attempts_exhausted": "the interrupted model request was already retried once",
    }

    def __init__(self, reason: str, differences: Sequence[str] = ()) -> None:
        why = self.EXPLANATIONS.get(reason, reason)
        changed = f" (what differs: {'; '.join(differences)})" if differences else ""
        super().__init__(
            f"Session recovery blocked ({reason}): {why}{changed}. Restore the previous configuration and recover "
            "again, or abort the unfinished operation."
        )
        self.reason = reason
        self.differences = tuple(differences)
        """What differs from the interrupted step's configuration snapshot, one phrase per field."""


class ToolError(TinyAgentError):
    """A tool refused or failed; its message becomes the model-facing ``Error: <message>`` content."""


class ToolAborted(TinyAgentError):
    """The ``cancel`` event was set: the execution stopped and its effects are unknown (``interrupted``)."""

    def __init__(self) -> None:
        super().__init__("Operation aborted")


class SettingsError(TinyAgentError):
    """The settings could not be read or written, or a profile in them cannot be used."""


class SettingsFileError(SettingsError):
    """The settings file is unreadable, not JSON, or has an invalid field; defaults are in effect.

    ``path`` is the file. The next save moves it aside (``settings.json.corrupt``) before writing.
    """

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path


class SettingsVersionError(SettingsError):
    """The settings file was written by a newer version of the app; it is neither used nor overwritten.

    ``found`` is the file's version, ``supported`` the newest this app reads.
    """

    def __init__(self, message: str, *, path: Path, found: int, supported: int) -> None:
        super().__init__(message)
        self.path = path
        self.found = found
        self.supported = supported


class SecretStoreError(TinyAgentError):
    """The OS keyring refused or failed an operation (e.g. it is locked, or the user dismissed the prompt)."""


class KeyringUnavailableError(SecretStoreError):
    """No usable OS keyring exists here; a key can only come from an environment variable, for one run."""
