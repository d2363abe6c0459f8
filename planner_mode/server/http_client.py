"""The HTTP client of the stateless AI servers (:mod:`planner_mode.server`), an ``AIClient``.

Both calls stream NDJSON (:mod:`planner_mode.server.wire`); a server that answers with one JSON body gives
just the final response. Every failure is an :class:`~planner_mode.client.AICallError` carrying what the call
cost, but a 401: :class:`AIServerUnauthorized`, a configuration error raised out of the engine's turn, since
asking again cannot help.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import threading
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing, suppress
from types import TracebackType
from typing import TypeVar

import httpx
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, ValidationError

from planner_mode.client import AICallError, AnswerReply, PlanReply
from planner_mode.plan import OperationOutcome
from planner_mode.server.wire import (
    NDJSON,
    AnalyzeRequest,
    AnalyzeResponse,
    AnswerDeltaLine,
    CallUsage,
    ErrorLine,
    ErrorResponse,
    RespondRequest,
    RespondResponse,
    parse_analyze_stream_line,
    parse_stream_line,
)
from shared.errors import (
    ConfigurationError,
    ModelOutputError,
    OutputLimitError,
    ProviderError,
    ProviderTimeoutError,
)
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationSpec

__all__ = ["DEFAULT_TIMEOUT_S", "AIServerUnauthorized", "HttpAIClient"]

R = TypeVar("R", bound=BaseModel)
W = TypeVar("W", AnalyzeResponse, RespondResponse)
T = TypeVar("T")

DEFAULT_TIMEOUT_S = 120.0
"""Default bound of one AI-server request, the model's time included (the providers' default too)."""


class AIServerUnauthorized(ConfigurationError):
    """The AI server at :attr:`url` refused the bearer token (HTTP 401): a setting to change, raised as itself
    (never as an :class:`AICallError`) so that a turn does not end in a failure that invites a retry."""

    def __init__(self, url: str) -> None:
        self.url = url
        super().__init__(
            f"The AI server {url} refused the request: missing or wrong bearer token (HTTP 401). Give the "
            "client the token the server was started with (HttpAIClient(token=...))."
        )


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


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default verifying TLS context, made once per process (loading CA bundles takes tens of ms)."""
    return httpx.create_ssl_context()


_CONNECTION_FAILURES = (httpx.ConnectError, httpx.ConnectTimeout)
"""Nothing reached a server: the only failures retried (on the next URL)."""


class _Exchange:
    """One AI request over HTTP: which server each attempt goes to, and how each reply (status, JSON body,
    NDJSON line) becomes a result or an :class:`AICallError` carrying what the call cost."""

    def __init__(self, client: HttpAIClient, path: str, body: BaseModel, *, stream: bool) -> None:
        self.client = client
        self.path = path
        self.content = body.model_dump_json().encode()
        self.headers = {"Content-Type": "application/json"}
        if stream:
            self.headers["Accept"] = f"{NDJSON}, application/json;q=0.5"
        self.url = ""
        self.started = 0.0

    async def send(self, http: httpx.AsyncClient) -> httpx.Response:
        """Send to the server whose turn it is, each retry (connection failures only) to the next in the list
        after the previous attempt's, whatever other requests took meanwhile, so that concurrent requests
        cannot send one request's retries back to the same dead server."""
        urls = self.client.urls
        first = self.client._take_turn()
        refused: Exception | None = None
        for attempt in range(self.client.retries + 1):
            self.url = urls[(first + attempt) % len(urls)]
            self.started = time.perf_counter()
            request = http.build_request(
                "POST", self.url + self.path, content=self.content, headers=self.headers
            )
            try:
                return await http.send(request, stream=True)
            except _CONNECTION_FAILURES as exc:
                refused = exc
            except httpx.HTTPError as exc:
                raise self.broke_off(exc) from exc
        raise AICallError(  # no model was called: nothing is counted
            ProviderError(
                f"Could not connect to any AI server ({', '.join(urls)}) after "
                f"{self.client.retries + 1} attempt(s): {refused}"
            )
        )

    def waited(self) -> CallUsage:
        """What a request that reached a server cost when no usage came back: one call, the time waited."""
        return CallUsage(model_calls=1, model_ms=(time.perf_counter() - self.started) * 1000)

    def failed(self, message: str) -> AICallError:
        """The server was reached and then failed: its call counts."""
        return AICallError(ProviderError(f"AI server {self.url} {message}"), self.waited())

    def broke_off(self, exc: httpx.HTTPError) -> AICallError:
        """The exchange timed out or broke off while the server called its model (tokens unknown)."""
        if isinstance(exc, httpx.TimeoutException):
            timeout = self.client.timeout.read
            message = f"AI server {self.url} did not answer within {timeout} s ({type(exc).__name__})."
            return AICallError(ProviderTimeoutError(message, timeout), self.waited())
        return self.failed(f"failed: {type(exc).__name__}: {exc}")

    def read(self, response: httpx.Response, response_model: type[R]) -> R:
        """The result of a whole JSON response, or the :class:`AICallError` its status and body stand for
        (:class:`AIServerUnauthorized` for a 401)."""
        if response.status_code == 200:
            try:
                return response_model.model_validate_json(response.content)
            except ValidationError as exc:
                raise AICallError(
                    ProviderError(f"AI server {self.url} sent an unexpected body: {exc}")
                ) from exc
        try:
            error = ErrorResponse.model_validate_json(response.content)
        except ValidationError:
            error = None
        if response.status_code == 502 and error is not None:
            raise AICallError(_cause(error), error.usage)
        if response.status_code == 401:
            raise AIServerUnauthorized(self.url)
        detail = error.error if error is not None else response.text[:300]
        raise AICallError(
            ProviderError(f"AI server {self.url} answered HTTP {response.status_code}: {detail}")
        )

    def line(
        self,
        text: str,
        parse: Callable[[str], AnswerDeltaLine | ErrorLine | BaseModel],
        response_model: type[R],
    ) -> str | R:
        """One NDJSON line: a delta, the final response (as ``response_model``), or the error it carries."""
        try:
            item = parse(text)
        except ValidationError as exc:
            raise self.failed(f"sent an unexpected stream line: {exc}") from exc
        if isinstance(item, AnswerDeltaLine):
            return item.text
        if not isinstance(item, ErrorLine):  # the response line: the response's fields and its ``type``
            return response_model.model_validate(dict(item))
        if item.kind in ("model_output", "provider", "timeout"):
            raise AICallError(_cause(item), item.usage or self.waited())
        failed = ProviderError(f"AI server {self.url} failed while streaming: {item.error}")
        raise AICallError(failed, item.usage or self.waited())

    async def results(
        self,
        parse: Callable[[str], AnswerDeltaLine | ErrorLine | BaseModel],
        response_model: type[R],
    ) -> AsyncGenerator[str | R, None]:
        """Send the request; yield its deltas, then its response (a server that does not stream: just the
        response)."""
        response = await self.send(await self.client._async_http())
        try:
            media_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if response.status_code != 200 or media_type != NDJSON:
                await response.aread()
                yield self.read(response, response_model)
                return
            async for text in response.aiter_lines():
                if text.strip():
                    item = self.line(text, parse, response_model)
                    yield item
                    if not isinstance(item, str):
                        return
            raise self.failed(f"ended the {self.path} stream without a response.")
        except httpx.HTTPError as exc:
            raise self.broke_off(exc) from exc
        finally:
            await response.aclose()


async def _close_when_loop_ends(http: httpx.AsyncClient, forget: Callable[[], None]) -> AsyncGenerator[None]:
    """Held suspended for the life of one event loop; closing it closes ``http`` on that loop.

    ``asyncio.run`` and ``asyncio.Runner`` close the async generators still open before closing their loop
    (``loop.shutdown_asyncgens()``), so a loop's client is closed on that loop without the caller's help.
    """
    try:
        yield
    finally:
        forget()
        await http.aclose()


class HttpAIClient:
    """Calls stateless AI servers over HTTP, round-robin over ``urls`` (article §14).

    Only connection failures (nothing reached a server) are retried, each on the next URL, up to ``retries``
    times: a request that reached a server is never repeated, so a turn never makes more model calls than
    planned. ``timeout`` bounds each request, the model's time included (for a stream, each wait for a line);
    ``connect_timeout`` (at most ``timeout``) bounds opening a connection, so that a dead server is skipped
    quickly. ``transport`` is for tests (``httpx.MockTransport``). ``config`` is accepted for the
    :class:`AIClient` interface and not sent: the model runs in the server's process, whose usage comes back
    in each response instead.

    Each event loop gets its own ``httpx.AsyncClient``, closed when that loop shuts down or by
    :meth:`aclose`, so one client may serve a long-lived loop, loops in several threads, or ``asyncio.run``
    calls in sequence (the engine's blocking ``ask``).
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        connect_timeout: float = 5.0,
        retries: int = 2,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not urls:
            raise ConfigurationError("HttpAIClient needs at least one AI server URL.")
        if retries < 0:
            raise ConfigurationError("retries must be >= 0.")
        if timeout <= 0 or connect_timeout <= 0:
            raise ConfigurationError("timeout and connect_timeout must be > 0 seconds.")
        self.urls = [_server_url(url) for url in urls]
        self.retries = retries
        self.timeout = httpx.Timeout(timeout, connect=min(connect_timeout, timeout))
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._transport = transport
        self._lock = threading.Lock()
        self._next = 0
        self._async: dict[asyncio.AbstractEventLoop, tuple[httpx.AsyncClient, AsyncGenerator[None]]] = {}
        self._closed = False

    def _take_turn(self) -> int:
        """The index of the server the next request goes to first (round-robin, one turn per request)."""
        with self._lock:
            index = self._next % len(self.urls)
            self._next += 1
        return index

    async def _async_http(self) -> httpx.AsyncClient:
        """The running loop's ``AsyncClient``, made on the loop's first request."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closed:
                raise RuntimeError("This HttpAIClient has been closed.")
            # Loops closed without shutting down their async generators leave entries: drop them.
            for stale in [other for other in self._async if other.is_closed()]:
                del self._async[stale]
            entry = self._async.get(loop)
            if entry is not None:
                return entry[0]
            http = httpx.AsyncClient(
                timeout=self.timeout,
                headers=self._headers,
                transport=self._transport,
                verify=_tls_context(),
            )
            keeper = _close_when_loop_ends(http, lambda: self._forget(loop))
            self._async[loop] = (http, keeper)
        await anext(keeper)  # started on this loop: the loop now closes it when it shuts down
        return http

    def _forget(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            self._async.pop(loop, None)

    # -- the calls ------------------------------------------------------------------------------------------

    def plan(
        self,
        message: str,
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
        stream: bool = True,
    ) -> AsyncGenerator[str | PlanReply, None]:
        """``POST /ai/analyze``, streamed as NDJSON unless ``stream=False`` (see :meth:`answer`)."""
        body = AnalyzeRequest(message=message, context=context, catalog=list(catalog))
        exchange = _Exchange(self, "/ai/analyze", body, stream=stream)
        return _replies(
            exchange.results(parse_analyze_stream_line, AnalyzeResponse),
            lambda response: PlanReply(response.plan, response.usage),
        )

    def answer(
        self,
        message: str,
        results: Sequence[OperationOutcome],
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
        stream: bool = True,
    ) -> AsyncGenerator[str | AnswerReply, None]:
        """``POST /ai/respond``, streamed as NDJSON unless ``stream=False``.

        Errors the server found before streaming keep their status and become :class:`AICallError` (a 502 as
        the failure its kind names); an ``error`` line, a broken or timed-out stream, or a stream without its
        final line raise :class:`AICallError` too, counting the call.
        """
        body = RespondRequest(question=message, results=list(results), context=context, catalog=list(catalog))
        exchange = _Exchange(self, "/ai/respond", body, stream=stream)
        return _replies(
            exchange.results(parse_stream_line, RespondResponse),
            lambda response: AnswerReply(response.answer, response.usage),
        )

    # -- closing --------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection pools, each event loop's on that loop.

        A loop that is running (in another thread) closes its client soon; one that has ended has closed its
        client already. Call :meth:`aclose` instead from inside a running loop to wait for that loop's client.
        """
        with self._lock:
            self._closed = True
            entries, self._async = list(self._async.items()), {}
        for loop, (_http, keeper) in entries:
            with suppress(RuntimeError):  # a loop that has closed meanwhile refuses: nothing left to do
                loop.call_soon_threadsafe(_close_soon, loop, keeper)

    async def aclose(self) -> None:
        """Close the connection pools, awaiting the running loop's client."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._async.pop(loop, None)
        self.close()
        if entry is not None:
            await entry[1].aclose()

    def __enter__(self) -> HttpAIClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> HttpAIClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


_closing: set[asyncio.Task[None]] = set()
"""Closing tasks started by :meth:`HttpAIClient.close` on other loops, held until done."""


async def _replies(
    lines: AsyncGenerator[str | W, None], reply: Callable[[W], T]
) -> AsyncGenerator[str | T, None]:
    """A call's stream with its final body (a wire response) turned into the engine's reply."""
    async with aclosing(lines):
        async for item in lines:
            yield item if isinstance(item, str) else reply(item)


def _close_soon(loop: asyncio.AbstractEventLoop, keeper: AsyncGenerator[None]) -> None:
    """On ``loop``: close ``keeper`` (and with it the loop's client) in a task."""

    async def close() -> None:
        await keeper.aclose()

    task = loop.create_task(close())
    _closing.add(task)
    task.add_done_callback(_closing.discard)
