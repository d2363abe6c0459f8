"""The stateless AI side of the planner: call 1 (``analyze``) and call 2 (``respond``).

:class:`PlannerAI` holds no conversation state: everything it needs arrives as arguments, so one instance can
serve any conversation from any thread or event loop (article §13). It asks the provider for native
structured output (``with_structured_output(..., method="json_schema")``) and, when the provider's parsing
fails or the model has no structured-output support, recovers the JSON from the raw text with
:mod:`planner_mode.parsing`. It never makes a second attempt: one method call is one model call.

Each call exists four ways, sharing one request and one reading of the reply: synchronous (``analyze``,
``respond``: the model's ``invoke``), asynchronous (``aanalyze``, ``arespond``: ``ainvoke``) and streamed
(``astream_analyze``, ``astream_respond``: ``astream``), yielding the text for the user as the model writes
it, decoded by :class:`~shared.json_stream.AnswerTextStream`, then the strictly parsed :class:`Plan` or
:class:`Answer`. Call 1's text for the user is a direct answer (``respuesta_directa``), streamed only when it
is the first key of the reply (:class:`DirectAnswerText`: the plan schema puts it first, so a model that
writes it has chosen to answer directly before writing anything else). A streamed call is reported to
callbacks like any other: LangChain's ``BaseChatModel.astream`` ends the run with ``on_llm_end`` carrying the
merged chunks (their ``usage_metadata`` and ``response_metadata``), so a ``UsageTracker`` counts it.
``config`` is a LangChain ``RunnableConfig`` passed to the model call (callbacks, tags, metadata).

**Constrained plans.** Call 1's schema is built for the catalog it is given
(:func:`planner_mode.plan_schema.plan_json_schema`: the operations the caller may run as an ``enum``, each
tied to its own parameters), so it is bound per call: the bound runnable of each catalog is kept in a small
LRU (:data:`PLAN_SCHEMA_CACHE_SIZE` catalogs; binding costs tens of microseconds, building the schema about
a millisecond). What each provider integration receives for ``method="json_schema"`` and a dict schema:

==========================  =================================================================================
``ChatOllama``              ``format``: the schema verbatim; Ollama compiles it into a llama.cpp grammar
                            (``anyOf``, ``enum``, ``$defs``/``$ref``, integer bounds, ``maxItems`` and
                            ``maxLength`` enforced while decoding).
``ChatOpenAI``              ``response_format: {"type": "json_schema", "json_schema": {"name": "Plan",
                            "description": …, "schema": <the rest>, "strict": false}}``. llama.cpp's and
                            vLLM's servers compile it into a grammar; OpenAI's own API only enforces
                            ``strict: true``, which would make every property required (optional parameters
                            as nullable) and is not requested: the same schema serves every provider.
``ChatGoogleGenerativeAI``  ``generationConfig.responseJsonSchema``: the schema verbatim (Gemini's JSON-schema
                            subset takes ``anyOf``, ``enum``, ``$defs``/``$ref``, bounds).
==========================  =================================================================================

None needs the plain variant, so every provider gets the union; ``PlannerAI(..., plan_schema="enum")`` sends
the plain one (``funcion`` an ``enum`` of names, ``parametros`` any object) to a provider that rejects
unions, and ``plan_schema="free"`` the unconstrained :class:`Plan` schema (``funcion`` any string), e.g. to
measure what the constraint is worth. Whatever was sent, the reply is read by the tolerant parser and
validated against the registry: the schema guides decoding, it is never the ERP's check.

Whatever the provider's SDK raises becomes the project's tree
(:func:`shared.llm.provider_errors.as_erp_error`): a timeout is a ``ProviderTimeoutError``, a reply cut at
the output cap an ``OutputLimitError`` (a model-output failure that says at how many tokens it was cut),
anything else a ``ProviderError``.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Hashable, Iterator, Sequence
from contextlib import aclosing, contextmanager
from typing import Any, Final, Generic, Literal, Protocol, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSequence
from pydantic import BaseModel, ValidationError

from planner_mode.parsing import message_text, parse_model_output
from planner_mode.plan import Answer, OperationOutcome, Plan
from planner_mode.plan_schema import catalog_key, plan_json_schema
from planner_mode.prompts import answer_messages, plan_messages
from shared.errors import ModelOutputError, OutputLimitError
from shared.json_stream import AnswerTextStream
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationSpec
from shared.text import strip_reasoning

__all__ = ["PLAN_SCHEMA_CACHE_SIZE", "DirectAnswerText", "PlanSchemaStyle", "PlannerAI", "TextDecoder"]

M = TypeVar("M", bound=BaseModel)
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

PlanSchemaStyle = Literal["union", "enum", "free"]
"""Which call-1 schema is sent: ``union`` (each operation with its own parameters), ``enum`` (operation names
only) or ``free`` (the :class:`Plan` model's schema, any operation name). See the module docstring."""

PLAN_SCHEMA_CACHE_SIZE: Final = 32
"""Catalogs whose bound call-1 runnable a :class:`PlannerAI` keeps (least recently used dropped first): one
per distinct set of permissions in practice (the demo has two), more behind an AI server shared by ERPs."""


class TextDecoder(Protocol):
    """Reads a streamed reply chunk by chunk and returns the text for the user each chunk completed
    (:class:`~shared.json_stream.AnswerTextStream`, :class:`DirectAnswerText`)."""

    @property
    def text(self) -> str:
        """Everything returned so far."""
        ...

    def feed(self, chunk: str) -> str:
        """Read the next raw chunk; return the text it completed (possibly ``""``)."""
        ...


_LEADING_DIRECT_ANSWER = re.compile(r'(?:```(?:json)?\s*)?\{\s*"respuesta_directa"\s*:\s*"')
"""What a reply writes before its direct answer's text when ``respuesta_directa`` is its first key (reasoning
blocks removed; a code fence allowed)."""


class DirectAnswerText:
    """Call 1's direct answer (``respuesta_directa``) as the model writes it, only when it is the reply's
    first key; nothing otherwise.

    The rule, so that what a streaming reader is shown is the answer: a reply that starts with its direct
    answer has chosen to answer directly (the plan schema and the prompt put ``respuesta_directa`` first and
    alone, :mod:`planner_mode.plan_schema`). A reply that writes ``operaciones`` first has chosen a plan: its
    ``respuesta_directa`` (if any) is not the turn's answer and is never shown. Whitespace around the text
    is held back (the engine shows the answer stripped). The rare reply that starts with a direct answer and
    then lists operations anyway contradicts the prompt: its operations run and call 2's answer follows what
    was shown (see :meth:`planner_mode.engine.PlannerEngine.astream`).
    """

    def __init__(self) -> None:
        self._decoder = AnswerTextStream("respuesta_directa")
        self._raw: list[str] = []
        self._leading: bool | None = None
        """Unknown until the answer's first character, then whether ``respuesta_directa`` came first."""
        self._shown: list[str] = []
        self._space = ""
        """Whitespace held back until visible text follows it."""

    @property
    def text(self) -> str:
        return "".join(self._shown)

    def feed(self, chunk: str) -> str:
        if self._leading is False:
            return ""
        if self._leading is None:
            self._raw.append(chunk)
        decoded = self._decoder.feed(chunk)
        if not decoded:
            return ""
        if self._leading is None:
            prefix = "".join(self._raw)[: self._decoder.prefix_chars]
            self._leading = _LEADING_DIRECT_ANSWER.fullmatch(strip_reasoning(prefix)) is not None
            self._raw = []
            if not self._leading:
                return ""
        if not self._shown:
            decoded = decoded.lstrip()
        text = self._space + decoded
        body = text.rstrip()
        self._space = text[len(body) :]
        if body:
            self._shown.append(body)
        return body


class _StructuredCall(Generic[M]):
    """One model asked for one schema: native structured output when available, our strict parser always.

    ``with_structured_output(schema, method="json_schema")`` returns ``bound_model | parser`` for the
    providers we support. Only the bound model is used: it asks the provider for the schema (Ollama
    ``format``, OpenAI ``response_format``, Gemini ``response_schema``), and the reply is read by
    :mod:`planner_mode.parsing`, never by LangChain's JSON parser, which silently closes cut JSON (a plan cut
    after its first operation would run as a shorter plan). Skipping ``include_raw=True`` also avoids the
    ``RunnableParallel`` threads it starts on every call.
    """

    def __init__(
        self,
        model: BaseChatModel,
        schema: type[M],
        json_schema: dict[str, Any] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> None:
        self.model = model
        self.schema = schema
        self.max_tokens = max_tokens
        # The JSON schema (not the class) is handed over: LangChain re-derives a class's schema on every call
        # for tracing metadata, which costs milliseconds; the reply is validated in ``_parse``.
        self._bound = _bind(model, json_schema if json_schema is not None else schema.model_json_schema())

    def invoke(self, messages: list[BaseMessage], config: RunnableConfig | None) -> M:
        with self._provider_errors():
            output = self._bound.invoke(messages, config=config)
        return self._read(output)

    async def ainvoke(self, messages: list[BaseMessage], config: RunnableConfig | None) -> M:
        with self._provider_errors():
            output = await self._bound.ainvoke(messages, config=config)
        return self._read(output)

    async def astream(
        self, messages: list[BaseMessage], config: RunnableConfig | None, text: TextDecoder
    ) -> AsyncGenerator[str | M, None]:
        """The reply's text deltas as ``text`` decodes them, then the whole reply read like ``invoke``'s.

        The stream is always read to its end (LangChain reports the call to callbacks only then); an error
        midway raises after the deltas already yielded.
        """
        chunks: list[Any] = []
        # Closed however the reading ends, so that a reader who stops early ends the model's run (and its
        # connection) now rather than whenever the generator is collected. Runnable.astream is a generator.
        stream = cast(AsyncGenerator[Any, None], self._bound.astream(messages, config=config))
        with self._provider_errors():
            async with aclosing(stream):
                async for chunk in stream:
                    chunks.append(chunk)
                    if isinstance(chunk, BaseMessage):
                        delta = text.feed(message_text(chunk.content))
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
        return self._parse(output)

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
    """A streamed reply as one message (chunks added as LangChain adds them), or the last item streamed
    (a whole runnable that streams parsed values, or a model that does not stream: one whole message)."""
    if chunks and all(isinstance(chunk, AIMessageChunk) for chunk in chunks):
        first: AIMessageChunk = chunks[0]
        return first + chunks[1:] if len(chunks) > 1 else first
    return chunks[-1] if chunks else None


def _bind(model: BaseChatModel, json_schema: dict[str, Any]) -> Runnable[Any, Any]:
    """``model`` asking for ``json_schema`` natively: the bound model of ``with_structured_output`` (its
    parser dropped, see :class:`_StructuredCall`), or ``model`` itself when it has no structured output."""
    try:
        structured = model.with_structured_output(json_schema, method="json_schema")
    except (NotImplementedError, ValueError, TypeError):
        # The model has no structured output (or not this method): ask plainly, parse the text.
        return model
    if isinstance(structured, RunnableSequence) and len(structured.steps) == 2:
        return structured.first
    return structured  # an unusual shape: keep the whole runnable and parse whatever it returns


class _Lru(Generic[K, V]):
    """A thread-safe mapping that keeps its ``maxsize`` most recently used entries."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class _PlanCalls:
    """Call 1's runnable for each catalog, built on first use and kept in an LRU.

    Looked up first by the identity of the specs (the in-process engine passes the registry's shared
    :class:`OperationSpec` objects: a tuple of ids, no serialisation) and then by content
    (:func:`~planner_mode.plan_schema.catalog_key`: the AI server parses new specs from every request). An
    identity entry holds its specs, so their ids cannot be reused while it is cached.
    """

    def __init__(
        self, build: Callable[[Sequence[OperationSpec]], _StructuredCall[Plan]], maxsize: int
    ) -> None:
        self._build = build
        self._by_content: _Lru[Hashable, _StructuredCall[Plan]] = _Lru(maxsize)
        self._by_identity: _Lru[tuple[int, ...], tuple[Sequence[OperationSpec], _StructuredCall[Plan]]]
        self._by_identity = _Lru(maxsize)

    def get(self, catalog: Sequence[OperationSpec]) -> _StructuredCall[Plan]:
        specs = tuple(catalog)
        identity = tuple(map(id, specs))
        held = self._by_identity.get(identity)
        if held is not None and all(a is b for a, b in zip(held[0], specs, strict=True)):
            return held[1]
        key = catalog_key(specs)
        call = self._by_content.get(key)
        if call is None:
            call = self._build(specs)
            self._by_content.put(key, call)
        self._by_identity.put(identity, (specs, call))
        return call

    def __len__(self) -> int:
        return len(self._by_content)


class PlannerAI:
    """The article's "LLM 1" and "LLM 2": plan a question, then phrase the ERP's results.

    ``answer_model`` defaults to ``plan_model``; pass a different one to plan with a small fast model and
    write with a stronger one. Every method raises :class:`~shared.errors.ModelOutputError` (unusable output;
    ``OutputLimitError`` when cut at the output cap) or :class:`~shared.errors.ProviderError` (the provider
    failed, whatever the SDK raised, a project error included; ``ProviderTimeoutError`` on a timeout).
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
        self._plan_calls = _PlanCalls(self._plan_call_for, PLAN_SCHEMA_CACHE_SIZE)
        self._answer_call = _StructuredCall(
            self.answer_model, Answer, max_tokens=configured_max_tokens(self.answer_model)
        )

    def plan_json_schema(self, catalog: Sequence[OperationSpec]) -> dict[str, Any]:
        """The JSON schema call 1 sends for ``catalog`` (a new dict; see :attr:`plan_schema`)."""
        if self.plan_schema == "free":
            return Plan.model_json_schema()
        return plan_json_schema(catalog, union=self.plan_schema == "union")

    def _plan_call_for(self, catalog: Sequence[OperationSpec]) -> _StructuredCall[Plan]:
        return _StructuredCall(
            self.plan_model, Plan, self.plan_json_schema(catalog), max_tokens=self._plan_max_tokens
        )

    def analyze(
        self,
        message: str,
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
    ) -> Plan:
        """Call 1: turn the user's message and the conversation context into a :class:`Plan`."""
        call = self._plan_calls.get(catalog)
        return _with_question(call.invoke(plan_messages(message, context, catalog), config), message)

    async def aanalyze(
        self,
        message: str,
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
    ) -> Plan:
        """:meth:`analyze` with the model's ``ainvoke``."""
        call = self._plan_calls.get(catalog)
        plan = await call.ainvoke(plan_messages(message, context, catalog), config)
        return _with_question(plan, message)

    async def astream_analyze(
        self,
        message: str,
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
    ) -> AsyncGenerator[str | Plan, None]:
        """:meth:`analyze` streamed: a direct answer's text in deltas as the model writes it (only when
        ``respuesta_directa`` is the reply's first key, :class:`DirectAnswerText`), then the :class:`Plan`,
        parsed from the whole reply exactly as :meth:`analyze` parses it.

        When the plan is a direct answer and the deltas are a start of it (stripped, as the engine shows
        it), the rest comes as one last delta (e.g. an answer found only inside reasoning). A failure raises
        after the deltas already yielded: the caller shows the final result, not the partial text.
        """
        call = self._plan_calls.get(catalog)
        text = DirectAnswerText()
        async for item in call.astream(plan_messages(message, context, catalog), config, text):
            if isinstance(item, str):
                yield item
                continue
            plan = _with_question(item, message)
            direct = (plan.respuesta_directa or "").strip() if plan.is_direct else ""
            if text.text and direct.startswith(text.text) and len(direct) > len(text.text):
                yield direct[len(text.text) :]
            yield plan

    def respond(
        self,
        question: str,
        results: Sequence[OperationOutcome],
        context: ConversationContext,
        *,
        config: RunnableConfig | None = None,
    ) -> Answer:
        """Call 2: phrase the operations' results (and errors) as an :class:`Answer` for the user."""
        return _checked(self._answer_call.invoke(answer_messages(question, results, context), config))

    async def arespond(
        self,
        question: str,
        results: Sequence[OperationOutcome],
        context: ConversationContext,
        *,
        config: RunnableConfig | None = None,
    ) -> Answer:
        """:meth:`respond` with the model's ``ainvoke``."""
        answer = await self._answer_call.ainvoke(answer_messages(question, results, context), config)
        return _checked(answer)

    async def astream_respond(
        self,
        question: str,
        results: Sequence[OperationOutcome],
        context: ConversationContext,
        *,
        config: RunnableConfig | None = None,
    ) -> AsyncGenerator[str | Answer, None]:
        """:meth:`respond` streamed: the ``respuesta`` text in deltas as the model writes it, then the
        :class:`Answer`, parsed from the whole reply exactly as :meth:`respond` parses it.

        The deltas concatenate to ``Answer.respuesta`` whenever the streamed text is a start of it (a
        remainder the stream could not decode, e.g. an answer found only inside reasoning, comes as one last
        delta). A failure (cut at the cap, unusable output, provider error) raises after the deltas already
        yielded: the caller shows the final result, not the partial text.
        """
        text = AnswerTextStream("respuesta")
        async for item in self._answer_call.astream(
            answer_messages(question, results, context), config, text
        ):
            if isinstance(item, str):
                yield item
                continue
            answer = _checked(item)
            if answer.respuesta.startswith(text.text) and len(answer.respuesta) > len(text.text):
                yield answer.respuesta[len(text.text) :]
            yield answer


def _with_question(plan: Plan, message: str) -> Plan:
    """The plan with its ``pregunta`` (the user's message when the model left it empty)."""
    return plan if plan.pregunta else plan.model_copy(update={"pregunta": message})


def _checked(answer: Answer) -> Answer:
    if not answer.respuesta.strip():
        raise ModelOutputError("The model returned an empty 'respuesta'.", raw=answer.model_dump_json())
    return answer
