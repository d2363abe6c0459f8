"""The stateless AI side of the planner: call 1 (``plan``) and call 2 (``answer``).

:class:`PlannerAI` holds no conversation state, so one instance can serve any conversation from any thread or
event loop (article §13). It asks the provider for native structured output
(``with_structured_output(..., method="json_schema")``) and reads the reply with :mod:`planner_mode.parsing`,
so a model without structured output works too. One method call is one model call: it never retries.

Each call is one async stream (the model's ``astream``, so callbacks and a ``UsageTracker`` see it like any
call): the text for the user as the model writes it (:mod:`planner_mode.streamed_text`), then the strictly
parsed :class:`Plan` or :class:`Answer`. ``config`` is the LangChain ``RunnableConfig`` of the model call.

**Constrained plans.** Call 1's schema is built for the catalog it is given
(:func:`planner_mode.plan_schema.plan_json_schema`), and the bound runnable of each catalog is kept in an LRU
cache of :data:`PLAN_SCHEMA_CACHE_SIZE` entries. ``ChatOllama`` sends it as ``format`` (a llama.cpp
grammar), ``ChatOpenAI`` as ``response_format`` with ``"strict": false`` (``strict: true`` would make every
property required), ``ChatGoogleGenerativeAI`` as ``responseJsonSchema``. ``plan_schema="enum"`` sends the
plain variant (for a provider that rejects unions), ``"free"`` the unconstrained :class:`Plan` schema and
``"none"`` no schema at all (to measure what the constraint is worth). The schema guides decoding; the reply
is still validated.

Whatever the provider's SDK raises becomes the project's tree
(:func:`shared.llm.provider_errors.as_erp_error`): ``ProviderTimeoutError``, ``OutputLimitError`` for a reply
cut at the output cap, else ``ProviderError``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSequence
from pydantic import BaseModel, ValidationError

from planner_mode.parsing import message_text, parse_model_output
from planner_mode.plan import Answer, OperationOutcome, Plan
from planner_mode.plan_schema import CatalogKey, PlanSchemaStyle, catalog_key, plan_json_schema
from planner_mode.prompts import answer_messages, plan_messages
from planner_mode.streamed_text import DirectAnswerText, FieldText
from shared.bounds import RAW_SHOWN_CHARS, clip_text, reply_max_chars
from shared.errors import ModelOutputError, OutputLimitError, ReplyTooLongError
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationSpec

__all__ = ["PLAN_SCHEMA_CACHE_SIZE", "PlanSchemaStyle", "PlannerAI"]

M = TypeVar("M", bound=BaseModel)

PLAN_SCHEMA_CACHE_SIZE: Final = 32
"""Catalogs whose bound call-1 runnable a :class:`PlannerAI` keeps (least recently used dropped first): one
per distinct set of permissions in practice (the demo has two), more behind an AI server shared by ERPs."""


class _StructuredCall(Generic[M]):
    """One model asked for one schema: native structured output when available, our strict parser always.

    Only the bound model of ``with_structured_output(schema, method="json_schema")`` is used: the reply is
    read by :mod:`planner_mode.parsing`, never by LangChain's JSON parser, which silently closes cut JSON (a
    plan cut after its first operation would run as a shorter plan).
    """

    def __init__(
        self,
        model: BaseChatModel,
        schema: type[M],
        json_schema: dict[str, Any] | None = None,
        *,
        max_tokens: int | None = None,
        constrained: bool = True,
    ) -> None:
        self.model = model
        self.schema = schema
        self.max_tokens = max_tokens
        self.max_chars = reply_max_chars(max_tokens)
        """The longest reply read (longer is :class:`~shared.errors.ReplyTooLongError`, before any check)."""
        # The JSON schema (not the class) is handed over: LangChain re-derives a class's schema on every call
        # for tracing metadata, which costs milliseconds; the reply is validated in ``_parse``.
        self._bound: Runnable[Any, Any] = (
            _bind(model, json_schema if json_schema is not None else schema.model_json_schema())
            if constrained
            else model
        )

    async def astream(
        self, messages: list[BaseMessage], config: RunnableConfig | None, text: FieldText, stream: bool
    ) -> AsyncGenerator[str | M, None]:
        """The reply's text deltas as ``text`` reads them, then the whole reply, strictly parsed.

        The stream is read to its end (LangChain reports the call to callbacks only then); an error midway
        raises after the deltas already yielded. ``stream=False``: one ``ainvoke``, no deltas.
        """
        if not stream:
            with self._provider_errors():
                output = await self._bound.ainvoke(messages, config=config)
            yield self._read(output)
            return
        chunks: list[Any] = []
        written = 0
        # Closed however the reading ends, so that a reader who stops early ends the model's run (and its
        # connection) now rather than whenever the generator is collected. Runnable.astream is a generator.
        replies = cast(AsyncGenerator[Any, None], self._bound.astream(messages, config=config))
        with self._provider_errors():
            async with aclosing(replies):
                async for chunk in replies:
                    chunks.append(chunk)
                    if isinstance(chunk, BaseMessage):
                        piece = message_text(chunk.content)
                        written += len(piece)
                        if written > self.max_chars:  # a server that ignores the cap: stop reading now
                            raise self._too_long(piece)
                        delta = text.feed(piece)
                        if delta:
                            yield delta
        yield self._read(_merged(chunks))

    @contextmanager
    def _provider_errors(self) -> Iterator[None]:
        """Whatever the provider's SDK raises, as the project's error (see the module docstring)."""
        # Imported on use: ``shared.llm`` also loads the offline model, which ``import planner_mode`` skips.
        from shared.llm.provider_errors import as_erp_error

        try:
            yield
        except Exception as exc:  # provider SDKs raise anything: network, HTTP, timeouts, SDK bugs
            raise as_erp_error(exc, max_tokens=self.max_tokens) from exc

    def _read(self, output: Any) -> M:
        """The reply as ``schema``: refused when the model stopped at its output cap, else parsed."""
        from shared.llm.provider_errors import stopped_at_limit

        if isinstance(output, BaseMessage) and stopped_at_limit(output):
            raise OutputLimitError(self.max_tokens, raw=message_text(output.content))
        if isinstance(output, BaseMessage) and len(reply := message_text(output.content)) > self.max_chars:
            raise self._too_long(reply)
        return self._parse(output)

    def _too_long(self, text: str) -> ReplyTooLongError:
        return ReplyTooLongError(self.max_tokens, self.max_chars, raw=clip_text(text, RAW_SHOWN_CHARS))

    def _parse(self, output: Any) -> M:
        if isinstance(output, self.schema):
            return output
        if isinstance(output, dict):
            try:
                return self.schema.model_validate(output)
            except ValidationError as exc:
                raise ModelOutputError(
                    f"The model's JSON does not match {self.schema.__name__}: {exc.errors()[0]['msg']}",
                    raw=str(output),
                ) from None
        if isinstance(output, AIMessage):
            # the function-calling fallback of BaseChatModel.with_structured_output
            for call in output.tool_calls:
                try:
                    return self.schema.model_validate(call["args"])
                except ValidationError:
                    continue
            return parse_model_output(message_text(output.content), self.schema)
        if isinstance(output, BaseMessage):
            return parse_model_output(message_text(output.content), self.schema)
        raise ModelOutputError(f"Unexpected model output of type {type(output).__name__}.", raw=str(output))


def _merged(chunks: list[Any]) -> Any:
    """A streamed reply as one message (chunks added as LangChain adds them), or the last item streamed."""
    if chunks and all(isinstance(chunk, AIMessageChunk) for chunk in chunks):
        first: AIMessageChunk = chunks[0]
        return first + chunks[1:] if len(chunks) > 1 else first
    return chunks[-1] if chunks else None


def _bind(model: BaseChatModel, json_schema: dict[str, Any]) -> Runnable[Any, Any]:
    """``model`` asking for ``json_schema`` natively (the bound model of ``with_structured_output``), or
    ``model`` itself when it has no structured output.

    Providers build structured output as a sequence whose first step is the bound model and whose later
    steps only read its reply: ``model | parser`` (most), ``model | _check_refusal | JsonOutputParser``
    (langchain-openai). Only that first step is kept, whatever follows it, so that the reply streams as
    message chunks, its stop reason is checked against the output cap and it is read by the strict parser.
    """
    try:
        structured = model.with_structured_output(json_schema, method="json_schema")
    except (NotImplementedError, ValueError, TypeError):
        # The model has no structured output (or not this method): ask plainly, parse the text.
        return model
    if isinstance(structured, RunnableSequence):
        return structured.first
    return structured  # an unusual shape: keep the whole runnable and parse whatever it returns


@dataclass(frozen=True, eq=False)
class _Catalog:
    """A catalog as a cache key, equal when :func:`~planner_mode.plan_schema.catalog_key` is (the AI server
    parses new, equal specs from every request)."""

    specs: tuple[OperationSpec, ...]
    key: CatalogKey

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Catalog) and other.key == self.key


class PlannerAI:
    """The article's "LLM 1" and "LLM 2": plan a question, then phrase the ERP's results.

    ``answer_model`` defaults to ``plan_model`` (plan with a small fast model, write with a stronger one).
    Each call is an async stream of the text for the user, then its parsed result; it raises
    :class:`~shared.errors.ModelOutputError` (``OutputLimitError`` when cut at the output cap) or
    :class:`~shared.errors.ProviderError` (``ProviderTimeoutError`` on a timeout), after the deltas already
    yielded: the caller shows the final result, not the partial text.
    """

    def __init__(
        self,
        plan_model: BaseChatModel,
        answer_model: BaseChatModel | None = None,
        *,
        plan_schema: PlanSchemaStyle = "union",
    ) -> None:
        from shared.llm.factory import configured_max_tokens

        self.plan_model = plan_model
        self.answer_model = answer_model if answer_model is not None else plan_model
        self.plan_schema: PlanSchemaStyle = plan_schema
        """Which call-1 schema is sent (see the module docstring)."""
        self._plan_max_tokens = configured_max_tokens(self.plan_model)
        self._plan_call = functools.lru_cache(maxsize=PLAN_SCHEMA_CACHE_SIZE)(self._plan_call_for)
        self._answer_call = _StructuredCall(
            self.answer_model, Answer, max_tokens=configured_max_tokens(self.answer_model)
        )

    def plan_json_schema(self, catalog: Sequence[OperationSpec]) -> dict[str, Any]:
        """The JSON schema call 1 sends for ``catalog`` (a new dict; see :attr:`plan_schema`; with ``none``,
        the schema a reply is validated against, sent to no model)."""
        if self.plan_schema in ("free", "none"):
            return Plan.model_json_schema()
        return plan_json_schema(catalog, union=self.plan_schema == "union")

    def _plan_call_for(self, catalog: _Catalog) -> _StructuredCall[Plan]:
        schema = self.plan_json_schema(catalog.specs)
        return _StructuredCall(
            self.plan_model,
            Plan,
            schema,
            max_tokens=self._plan_max_tokens,
            constrained=self.plan_schema != "none",
        )

    async def plan(
        self,
        message: str,
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
        stream: bool = True,
    ) -> AsyncGenerator[str | Plan, None]:
        """Call 1: the question and the conversation context as a :class:`Plan`, the last item.

        Before it, a direct answer's text in deltas as the model writes it, when ``respuesta_directa`` is
        the reply's first key; the rest of a direct answer the deltas began comes as one last delta.
        ``stream=False``: one ``ainvoke``, for a caller that reads only the result.
        """
        specs = tuple(catalog)
        call = self._plan_call(_Catalog(specs, catalog_key(specs)))
        text = DirectAnswerText()
        async for item in call.astream(plan_messages(message, context, catalog), config, text, stream):
            if isinstance(item, str):
                yield item
                continue
            plan = item if item.question else item.model_copy(update={"question": message})
            direct = (plan.direct_answer or "").strip() if plan.is_direct else ""
            if text.text and direct.startswith(text.text) and len(direct) > len(text.text):
                yield direct[len(text.text) :]
            yield plan

    async def answer(
        self,
        message: str,
        results: Sequence[OperationOutcome],
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
        stream: bool = True,
    ) -> AsyncGenerator[str | Answer, None]:
        """Call 2: the operations' results (and errors) phrased as an :class:`Answer`, the last item.

        ``context`` and ``catalog`` are call 1's: call 2's prompt continues call 1's, so that a prefix cache
        serves it (:func:`planner_mode.prompts.answer_messages`).

        Before it, the ``respuesta`` text in deltas as the model writes it (a remainder the stream could not
        read comes as one last delta). ``stream`` as in :meth:`plan`.
        """
        text = FieldText("respuesta")
        messages = answer_messages(message, results, context, catalog)
        async for item in self._answer_call.astream(messages, config, text, stream):
            if isinstance(item, str):
                yield item
                continue
            if not item.text.strip():
                raise ModelOutputError("The model returned an empty 'respuesta'.", raw=item.model_dump_json())
            if item.text.startswith(text.text) and len(item.text) > len(text.text):
                yield item.text[len(text.text) :]
            yield item
