"""What providers raise and report, in the project's terms: timeouts, length stops, the tokens a failure used.

Timeouts arrive as ``httpx``/``httpx2`` timeouts, ``openai.APITimeoutError``, the builtin ``TimeoutError``,
``requests.Timeout`` or a Gemini ``DEADLINE_EXCEEDED``; length stops as ``finish_reason="length"``,
``done_reason="length"``, ``finish_reason="MAX_TOKENS"`` or ``openai.LengthFinishReasonError``. SDK classes
are looked up in ``sys.modules``, so a missing optional SDK costs nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.messages import BaseMessage

from shared.errors import (
    ErpAiError,
    ModelOutputError,
    OutputLimitError,
    ProviderError,
    ProviderTimeoutError,
    TurnLimitError,
)

_TIMEOUT_CLASSES: tuple[tuple[str, str], ...] = (
    ("httpx", "TimeoutException"),
    ("httpx2", "TimeoutException"),
    ("openai", "APITimeoutError"),
    ("langchain_core.exceptions", "ModelTimeoutError"),
    ("requests.exceptions", "Timeout"),
    ("google.api_core.exceptions", "DeadlineExceeded"),
)
"""(module, class) pairs whose instances are timeouts; the builtin ``TimeoutError`` is checked directly."""

_CONNECT_CLASSES: tuple[tuple[str, str], ...] = (
    ("httpx", "ConnectError"),
    ("httpx2", "ConnectError"),
    ("aiohttp", "ClientConnectorError"),
)
"""(module, class) pairs raised when no connection to the server could be opened (the builtin
``ConnectionRefusedError`` is checked directly)."""

_OLLAMA_UNREACHABLE = "Failed to connect to Ollama"
"""How the ``ollama`` client words a refused connection (a builtin ``ConnectionError``, its cause dropped)."""

_DEADLINE_STATUSES = frozenset({"DEADLINE_EXCEEDED"})
"""google-genai ``APIError.status`` values that mean the server gave up waiting for the model."""

_LENGTH_FINISH_REASONS = frozenset({"length", "max_tokens"})
"""``finish_reason`` values (compared lower-cased) meaning the output hit the cap."""


_MALFORMED_OUTPUT_MARKERS = ("error parsing tool call",)
"""How a model server says that the *model's* output was malformed (Ollama, langchain#34746)."""


def as_erp_error(
    error: BaseException, *, max_tokens: int | None = None, timeout: float | None = None
) -> ErpAiError:
    """The project's error for what a model call raised (``raise as_erp_error(exc) from exc``)."""
    if isinstance(error, ModelOutputError | ProviderError | TurnLimitError):
        return error
    if isinstance(error, ErpAiError):
        return ProviderError(f"The model provider failed: {_describe(error)}")
    chain = list(_chain(error))
    timeouts = _classes(_TIMEOUT_CLASSES)
    for link in chain:
        if isinstance(link, (TimeoutError, *timeouts)) or _is_deadline(link):
            suffix = f" within {timeout:g} s" if timeout is not None else " within the request timeout"
            return ProviderTimeoutError(
                f"The model provider did not answer{suffix}: {_describe(link)}", timeout=timeout
            )
    length = _classes((("openai", "LengthFinishReasonError"),))
    parser = _classes((("langchain_core.exceptions", "OutputParserException"),))
    for link in chain:
        if isinstance(link, length):
            return OutputLimitError(max_tokens, raw=_completion_text(link))
        if isinstance(link, parser):
            raw = getattr(link, "llm_output", None)
            return ModelOutputError(
                f"The model's output could not be parsed: {link}", raw=raw if isinstance(raw, str) else None
            )
        if any(marker in str(link) for marker in _MALFORMED_OUTPUT_MARKERS):
            return ModelOutputError(f"The provider could not parse the model's output: {_describe(link)}")
    return ProviderError(f"The model provider failed: {_describe(error)}")


def stopped_at_limit(message: BaseMessage) -> bool:
    """Whether a reply stopped because it hit the output cap (so its text is incomplete)."""
    metadata = getattr(message, "response_metadata", None) or {}
    finish_reason = metadata.get("finish_reason")
    if isinstance(finish_reason, str) and finish_reason.lower() in _LENGTH_FINISH_REASONS:
        return True
    return metadata.get("done_reason") == "length"


def never_reached_model(error: BaseException) -> bool:
    """Whether ``error`` means the request never reached a model: no connection to the server could be
    opened (refused, unknown host). Such a failure is no model call and used no tokens."""
    connect = _classes(_CONNECT_CLASSES)
    return any(
        isinstance(link, (ConnectionRefusedError, *connect))
        or (type(link) is ConnectionError and str(link).startswith(_OLLAMA_UNREACHABLE))
        for link in _chain(error)
    )


def usage_from_error(error: BaseException) -> tuple[int, int] | None:
    """(input tokens, output tokens) a failed call reported, or ``None`` when the error carries no usage."""
    for link in _chain(error):
        usage = getattr(getattr(link, "completion", None), "usage", None)
        if usage is not None:
            found = _tokens(getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
            if found is not None:
                return found
        metadata = getattr(link, "usage_metadata", None)
        if isinstance(metadata, Mapping):
            found = _tokens(metadata.get("input_tokens"), metadata.get("output_tokens"))
            if found is not None:
                return found
    return None


# -- helpers ------------------------------------------------------------------------------------------------


def _chain(error: BaseException) -> Iterator[BaseException]:
    """The exception, then what it was raised from (``__cause__``, else an unsuppressed ``__context__``)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        yield current
        if current.__cause__ is not None:
            current = current.__cause__
        elif not current.__suppress_context__:
            current = current.__context__
        else:
            current = None


def _classes(names: tuple[tuple[str, str], ...]) -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    for module_name, class_name in names:
        module = sys.modules.get(module_name)
        cls = getattr(module, class_name, None) if module is not None else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def _is_deadline(error: BaseException) -> bool:
    if not isinstance(error, _classes((("google.genai.errors", "APIError"),))):
        return False
    return getattr(error, "status", None) in _DEADLINE_STATUSES or getattr(error, "code", None) == 504


def _describe(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _completion_text(error: BaseException) -> str | None:
    choices: Any = getattr(getattr(error, "completion", None), "choices", None) or []
    for choice in choices:
        content = getattr(getattr(choice, "message", None), "content", None)
        if isinstance(content, str):
            return content
    return None


def _tokens(input_tokens: Any, output_tokens: Any) -> tuple[int, int] | None:
    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    counted_in, counted_out = count(input_tokens), count(output_tokens)
    if counted_in is None and counted_out is None:
        return None
    return counted_in or 0, counted_out or 0
