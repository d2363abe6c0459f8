"""How the ERP-side engine reaches the AI: in process, or over HTTP to stateless AI servers.

Both clients implement :class:`AIClient`: ``analyze`` returns the plan and ``respond`` the answer, each with
the :class:`~planner_mode.wire.CallUsage` it cost. A failed call raises :class:`AICallError`, which wraps the
:class:`~shared.errors.ModelOutputError` or :class:`~shared.errors.ProviderError` and still carries the usage,
so the engine's per-turn counts include failed calls.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, TypeVar, runtime_checkable

import httpx
from pydantic import BaseModel, ValidationError

from planner_mode.ai import PlannerAI
from planner_mode.plan import OperationOutcome
from planner_mode.wire import (
    AnalyzeRequest,
    AnalyzeResponse,
    CallUsage,
    ErrorResponse,
    RespondRequest,
    RespondResponse,
)
from shared.errors import (
    ConfigurationError,
    ErpAiError,
    ModelOutputError,
    OutputLimitError,
    ProviderError,
    ProviderTimeoutError,
)
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationSpec

__all__ = ["AICallError", "AIClient", "HttpAIClient", "InProcessAIClient"]

R = TypeVar("R", bound=BaseModel)

DEFAULT_TIMEOUT_S = 120.0
"""Default bound of one AI-server request, the model's time included (the providers' default too)."""


class AICallError(ErpAiError):
    """A call to the AI failed; ``cause`` says how and ``usage`` what the failed call cost."""

    def __init__(self, cause: ModelOutputError | ProviderError, usage: CallUsage | None = None) -> None:
        self.cause = cause
        self.usage = usage or CallUsage()
        super().__init__(str(cause))


@runtime_checkable
class AIClient(Protocol):
    """The two calls of a planner turn. Implementations hold no conversation state."""

    def analyze(
        self, message: str, context: ConversationContext, catalog: Sequence[OperationSpec]
    ) -> AnalyzeResponse:
        """Call 1: plan the question. Raises :class:`AICallError`."""
        ...

    def respond(
        self, question: str, results: Sequence[OperationOutcome], context: ConversationContext
    ) -> RespondResponse:
        """Call 2: phrase the results. Raises :class:`AICallError`."""
        ...


class InProcessAIClient:
    """Calls a :class:`PlannerAI` in this process, measuring each call with a ``UsageTracker``."""

    def __init__(self, ai: PlannerAI) -> None:
        self.ai = ai

    def analyze(
        self, message: str, context: ConversationContext, catalog: Sequence[OperationSpec]
    ) -> AnalyzeResponse:
        """Call 1 in process."""
        # Imported on use: ``shared.llm`` also loads the offline model, which ``import planner_mode`` skips.
        from shared.llm.usage import UsageTracker

        tracker = UsageTracker()
        try:
            plan = self.ai.analyze(message, context, catalog, callbacks=[tracker])
        except (ModelOutputError, ProviderError) as exc:
            raise AICallError(exc, CallUsage.from_tracker(tracker)) from exc
        return AnalyzeResponse(plan=plan, usage=CallUsage.from_tracker(tracker))

    def respond(
        self, question: str, results: Sequence[OperationOutcome], context: ConversationContext
    ) -> RespondResponse:
        """Call 2 in process."""
        from shared.llm.usage import UsageTracker

        tracker = UsageTracker()
        try:
            answer = self.ai.respond(question, results, context, callbacks=[tracker])
        except (ModelOutputError, ProviderError) as exc:
            raise AICallError(exc, CallUsage.from_tracker(tracker)) from exc
        return RespondResponse(answer=answer, usage=CallUsage.from_tracker(tracker))


def _cause(error: ErrorResponse) -> ModelOutputError | ProviderError:
    """The exception a 502 stands for, as the model's own process raised it (same kind, same cap)."""
    if error.kind == "timeout":
        return ProviderTimeoutError(error.error)
    if error.kind == "model_output":
        if error.max_tokens is not None:
            return OutputLimitError(error.max_tokens)
        return ModelOutputError(error.error)
    return ProviderError(error.error)


def _server_url(url: str) -> str:
    """``url`` without a trailing slash; a ``ConfigurationError`` unless it is ``http(s)://host[:port][/path]``."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigurationError(f"Invalid AI server URL {url!r}: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigurationError(f"An AI server URL looks like http://host:port, not {url!r}.")
    return url.rstrip("/")


class HttpAIClient:
    """Calls stateless AI servers over HTTP, round-robin over ``urls`` (article §14).

    Each request goes to the next URL. Only connection failures (nothing reached a server) are retried, on the
    following URLs, up to ``retries`` times: a request that reached a server is never repeated, so a turn
    never makes more model calls than planned. ``timeout`` bounds each request, the model's time included;
    ``connect_timeout`` (at most ``timeout``) bounds opening a connection, so that an unreachable server is
    skipped quickly. ``transport`` is for tests (``httpx.MockTransport``). Safe to share between threads.
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        connect_timeout: float = 5.0,
        retries: int = 2,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not urls:
            raise ConfigurationError("HttpAIClient needs at least one AI server URL.")
        if retries < 0:
            raise ConfigurationError("retries must be >= 0.")
        if timeout <= 0 or connect_timeout <= 0:
            raise ConfigurationError("timeout and connect_timeout must be > 0 seconds.")
        self.urls = [_server_url(url) for url in urls]
        self.retries = retries
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(connect_timeout, timeout)),
            headers=headers,
            transport=transport,
        )
        self._lock = threading.Lock()
        self._next = 0

    def _next_url(self) -> str:
        with self._lock:
            url = self.urls[self._next % len(self.urls)]
            self._next += 1
        return url

    def _post(self, path: str, body: BaseModel, response_model: type[R]) -> R:
        content = body.model_dump_json()
        last_error: Exception | None = None
        for _attempt in range(self.retries + 1):
            url = self._next_url()
            started = time.perf_counter()
            try:
                response = self._http.post(
                    url + path, content=content, headers={"Content-Type": "application/json"}
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                last_error = exc
                continue
            except httpx.HTTPError as exc:
                # The request reached a server, which was calling its model when it timed out or broke off:
                # count that call and the wait as model time (its tokens are unknown: no answer came back).
                waited = CallUsage(model_calls=1, model_ms=(time.perf_counter() - started) * 1000)
                if isinstance(exc, httpx.TimeoutException):
                    timeout = self._http.timeout.read
                    message = f"AI server {url} did not answer within {timeout} s ({type(exc).__name__})."
                    raise AICallError(ProviderTimeoutError(message, timeout), waited) from exc
                failed = ProviderError(f"AI server {url} failed: {type(exc).__name__}: {exc}")
                raise AICallError(failed, waited) from exc
            return self._read(url, response, response_model)
        raise AICallError(
            ProviderError(
                f"Could not connect to any AI server ({', '.join(self.urls)}) after "
                f"{self.retries + 1} attempt(s): {last_error}"
            )
        )

    @staticmethod
    def _read(url: str, response: httpx.Response, response_model: type[R]) -> R:
        if response.status_code == 200:
            try:
                return response_model.model_validate_json(response.content)
            except ValidationError as exc:
                raise AICallError(ProviderError(f"AI server {url} sent an unexpected body: {exc}")) from exc
        try:
            error = ErrorResponse.model_validate_json(response.content)
        except ValidationError:
            error = None
        if response.status_code == 502 and error is not None:
            raise AICallError(_cause(error), error.usage)
        if response.status_code == 401:
            raise AICallError(ProviderError(f"AI server {url} rejected the request: missing or wrong token."))
        detail = error.error if error is not None else response.text[:300]
        raise AICallError(ProviderError(f"AI server {url} answered HTTP {response.status_code}: {detail}"))

    def analyze(
        self, message: str, context: ConversationContext, catalog: Sequence[OperationSpec]
    ) -> AnalyzeResponse:
        """``POST /ai/analyze``."""
        body = AnalyzeRequest(message=message, context=context, catalog=list(catalog))
        return self._post("/ai/analyze", body, AnalyzeResponse)

    def respond(
        self, question: str, results: Sequence[OperationOutcome], context: ConversationContext
    ) -> RespondResponse:
        """``POST /ai/respond``."""
        body = RespondRequest(question=question, results=list(results), context=context)
        return self._post("/ai/respond", body, RespondResponse)

    def close(self) -> None:
        """Close the underlying HTTP connection pool."""
        self._http.close()

    def __enter__(self) -> HttpAIClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
