"""``OfflineSalesModel``: a deterministic LangChain chat model that plays an LLM for the sales assistant.

It is a stand-in for the default benchmark, demos and tests, not a measure of model quality. It sees only
the messages it is sent (it never imports the ERP, the registry, the memory store or the benchmark) and
chooses one of three behaviours from what it is asked:

1. **Tool calling** (``bind_tools``): ``tool_calls`` for the question's operations, independent calls together
   in one message, dependent ones one step at a time; then a final answer written from the ``ToolMessage``\\s
   (plain text, or the answer JSON as a call to a bound answer tool / as content when a ``response_format`` is
   given, which is how LangChain's ``ToolStrategy`` and ``ProviderStrategy`` ask for a structured answer).
2. **Plan** (a schema with ``operaciones``, or a system prompt with the quoted word ``"operaciones"``): the
   article's plan JSON.
3. **Answer** (a schema with ``respuesta``, or a system prompt with ``"respuesta"``): ``respuesta``,
   ``memoria`` and ``estado`` written from the ``Resultados:`` block.

JSON is written the way the prompt shows it: compact when the system prompt's examples are compact
(:attr:`~._prompt.PromptView.compact_json`), with spaces otherwise; keys in the requested schema's order (a
grammar built from it would allow no other), or without a schema in the order the prompt names them; a direct
answer without ``"operaciones": []`` when the prompt shows one alone. Tool calls are counted as compact JSON,
so a compact plan and a tool call are measured with the same ruler.

Token counts follow :mod:`shared.llm.tokens`; ``usage_metadata["input_token_details"]["cache_read"]``
reports what a prefix cache would have served (:mod:`benchmarks.stand_ins.offline._cache`: a model of a
cache over the
instance's recent prompts, by whole blocks; not a measurement); ``max_tokens`` cuts a longer reply as a real
model does (``finish_reason="length"``, otherwise ``"stop"`` or ``"tool_calls"``); a latency profile adds
``simulated_latency_ms``, ``simulated_first_token_ms`` and ``simulated_ms_per_token`` to
``response_metadata`` (cached prompt tokens skip prefill); a
:class:`~benchmarks.stand_ins.faults.FaultConfig` makes
chosen calls misbehave (the modes are listed in :mod:`benchmarks.stand_ins.faults`). ``stream``/``astream``
send the
same reply in several chunks (text and JSON a few tokens at a time, tool-call arguments likewise), whose sum
equals what ``invoke`` returns.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams, LanguageModelInput
from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import invalid_tool_call, tool_call, tool_call_chunk
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.output_parsers.openai_tools import JsonOutputKeyToolsParser, PydanticToolsParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from langchain_core.utils.pydantic import is_basemodel_subclass
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, field_validator

from benchmarks.stand_ins.chunks import stream_pieces
from benchmarks.stand_ins.faults import (
    RUNAWAY_CONTEXT_TOKENS,
    FaultConfig,
    OfflineProviderError,
    OfflineProviderTimeout,
    OfflineStreamBreak,
    cut_to_tokens,
    grow,
)
from benchmarks.stand_ins.latency import LatencyProfile, resolve_latency_profile
from benchmarks.stand_ins.offline._answers import Executed, compose_answer, describe
from benchmarks.stand_ins.offline._cache import DEFAULT_PROMPT_CACHE_SIZE, PrefixCache, prompt_blocks
from benchmarks.stand_ins.offline._faults import (
    Draft,
    FaultSite,
    catalog_names,
    inject,
    prompt_kind,
    request_kind,
)
from benchmarks.stand_ins.offline._generic import ToolSpec, arguments, explicit_call, named_tool
from benchmarks.stand_ins.offline._prompt import PromptView, TurnCall, read_prompt
from benchmarks.stand_ins.offline._schema import (
    alternatives,
    conform,
    enum_values,
    fill,
    mentions,
    properties,
    resolve,
    schema_kind,
)
from benchmarks.stand_ins.offline._understand import KNOWN_OPERATIONS, Step, understand
from shared.llm.tokens import approx_json_tokens, approx_tokens

StructuredMethod = Literal["function_calling", "json_mode", "json_schema"]


@dataclass
class _Request:
    """What the caller asked for, from the call's keyword arguments."""

    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: str | None = None
    schema: dict[str, Any] | None = None
    json_mode: bool = False


def _normalise_tool_choice(choice: Any) -> str | None:
    if choice is None or choice is False:
        return None
    if choice is True or choice in ("any", "required"):
        return "required"
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        return str(name) if name else "required"
    return str(choice)


def _schema_from_format(value: Any) -> tuple[dict[str, Any] | None, bool]:
    """``(schema, json_mode)`` from an OpenAI ``response_format`` or an Ollama ``format`` value."""
    if value is None or value == "":
        return None, False
    if value == "json":
        return None, True
    if isinstance(value, type):
        return convert_to_json_schema(value), False
    if isinstance(value, dict):
        if value.get("type") == "json_object":
            return None, True
        if value.get("type") == "json_schema":
            inner = value.get("json_schema") or {}
            schema = inner.get("schema") if isinstance(inner, dict) else None
            return (schema if isinstance(schema, dict) else None), schema is None
        return value, False
    return None, False


def _read_request(kwargs: dict[str, Any]) -> _Request:
    request = _Request(tool_choice=_normalise_tool_choice(kwargs.get("tool_choice")))
    for tool in kwargs.get("tools") or []:
        function = convert_to_openai_tool(tool)["function"]
        request.tools.append(
            ToolSpec(
                name=function["name"],
                description=function.get("description", ""),
                parameters=function.get("parameters") or {"type": "object", "properties": {}},
            )
        )
    for key in ("response_format", "format"):
        schema, json_mode = _schema_from_format(kwargs.get(key))
        if schema is not None or json_mode:
            request.schema, request.json_mode = schema, json_mode
            break
    return request


@dataclass(frozen=True)
class _Reply:
    """One call's finished reply, and whether the ``stream_break`` fault cuts it midway."""

    message: AIMessage
    call_index: int
    breaks: bool = False

    def stream(self) -> Iterator[ChatGenerationChunk]:
        """The reply as stream chunks (:func:`_chunks`); a breaking reply raises after half of its pieces."""
        chunks = _chunks(self.message)
        if not self.breaks:
            yield from chunks
            return
        sent = _before_break(chunks)
        yield from sent
        raise self._break_error(sent)

    def check(self) -> None:
        """Raise what an unstreamed call ends on: the ``stream_break`` error, if the reply breaks.

        Raises:
            OfflineStreamBreak: the reply breaks; its usage counts the chunks a stream would have sent.
        """
        if self.breaks:
            raise self._break_error(_before_break(_chunks(self.message)))

    def _break_error(self, sent: Sequence[ChatGenerationChunk]) -> OfflineStreamBreak:
        usage = self.message.usage_metadata
        return OfflineStreamBreak(
            f"Simulated dropped connection on call {self.call_index} after {len(sent)} streamed chunks "
            "(fault mode stream_break).",
            input_tokens=usage["input_tokens"] if usage else 0,
            output_tokens=sum(_chunk_tokens(chunk) for chunk in sent),
        )


def _before_break(chunks: list[ChatGenerationChunk]) -> list[ChatGenerationChunk]:
    """The chunks a ``stream_break`` lets through: the first half of the pieces, at least one (if any).

    The last chunk (finish reason, usage) is never among them.
    """
    pieces = chunks[:-1]
    return pieces[: max(1, len(pieces) // 2)]


def _chunks(message: AIMessage) -> list[ChatGenerationChunk]:
    """``message`` as the chunks a streaming server would send; their sum equals ``message``.

    Text content in :func:`~benchmarks.stand_ins.chunks.stream_pieces` (JSON included), then each tool
    call: its name
    and id with the first piece of its arguments, then the other pieces under the same ``index`` (as
    OpenAI-compatible servers stream them); invalid tool calls likewise. The last chunk is empty and carries
    ``usage_metadata``, ``response_metadata`` (finish reason, simulated timings), ``chunk_position="last"``.
    """
    content = message.content if isinstance(message.content, str) else message.text
    chunks = [ChatGenerationChunk(message=AIMessageChunk(content=piece)) for piece in stream_pieces(content)]
    calls: list[tuple[str | None, str, str | None]] = [
        (c["name"], json.dumps(c["args"], ensure_ascii=False), c["id"]) for c in message.tool_calls
    ]
    calls += [(c.get("name"), c.get("args") or "", c.get("id")) for c in message.invalid_tool_calls]
    for index, (name, args_text, call_id) in enumerate(calls):
        for number, piece in enumerate(stream_pieces(args_text) or [""]):
            first = number == 0
            part = tool_call_chunk(
                name=name if first else None, args=piece, id=call_id if first else None, index=index
            )
            chunks.append(ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[part])))
    chunks.append(
        ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
                chunk_position="last",
            )
        )
    )
    return chunks


def _chunk_tokens(chunk: ChatGenerationChunk) -> int:
    """Output tokens of one streamed piece: its text and tool-call argument text."""
    message = chunk.message
    arguments = "".join(
        str(part.get("args") or "") for part in getattr(message, "tool_call_chunks", None) or []
    )
    return approx_tokens(chunk.text) + approx_tokens(arguments)


class OfflineSalesModel(BaseChatModel):
    """A deterministic, offline chat model for the ERP sales assistant (see the module docstring).

    Example:
        >>> model = OfflineSalesModel(latency_profile="gpu-8b")
        >>> model.invoke("Hola").content.startswith("¡Hola!")
        True
    """

    model_config = ConfigDict(populate_by_name=True)

    model_name: str = Field(default="offline-sales", alias="model")
    """Name reported in ``response_metadata["model_name"]``."""
    temperature: float = 0.0
    """Accepted for compatibility; the model is deterministic whatever its value."""
    max_tokens: int | None = None
    """Output cap, like a real model's: a longer reply (text, JSON, structured output or tool calls) is cut at
    this many tokens, reports ``output_tokens`` equal to the cap and ``finish_reason="length"``; tool calls
    that did not fit are left as text, never as valid calls. A per-call ``max_tokens=`` overrides it."""
    timeout: float | None = None
    """Accepted for compatibility; nothing waits."""
    stop: list[str] | None = None
    """Default stop sequences: text replies end before the first one."""
    max_retries: int = 2
    """Accepted for compatibility; nothing is retried."""
    api_key: SecretStr | None = None
    """Accepted for compatibility; never used."""
    streaming: bool = False
    """Accepted for compatibility (``invoke`` and ``stream`` give the same reply; ``stream`` in chunks)."""
    latency_profile: LatencyProfile | None = None
    """When set, ``response_metadata`` reports the call's modelled time: ``simulated_latency_ms`` (the whole
    call), ``simulated_first_token_ms`` (overhead, prefill, one output token), ``simulated_ms_per_token``.
    A profile whose server uses a response-format schema as a grammar only
    (:attr:`~benchmarks.stand_ins.latency.LatencyProfile.schema_as_grammar`: the local presets) also leaves
    that schema
    out of ``input_tokens``, as llama.cpp and Ollama report them."""
    faults: FaultConfig | None = None
    """When set, calls selected by the config misbehave."""
    prompt_cache_size: int = Field(default=DEFAULT_PROMPT_CACHE_SIZE, ge=0)
    """Recent prompts the modelled prefix cache keeps (:mod:`benchmarks.stand_ins.offline._cache`); every
    call reports
    ``usage_metadata["input_token_details"]["cache_read"]``, the tokens of its prompt's longest run of
    leading blocks (tools, response format, messages) shared with one of them. ``0``: no cache (always 0)."""

    _calls: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _prompt_cache: PrefixCache = PrivateAttr(default_factory=PrefixCache)

    def model_post_init(self, context: Any, /) -> None:
        """Size the prompt cache from :attr:`prompt_cache_size` (each instance has its own)."""
        super().model_post_init(context)
        self._prompt_cache = PrefixCache(self.prompt_cache_size)

    @field_validator("latency_profile", mode="before")
    @classmethod
    def _profile_by_name(cls, value: Any) -> Any:
        return resolve_latency_profile(value) if isinstance(value, str) else value

    @field_validator("faults", mode="before")
    @classmethod
    def _fault_by_mode(cls, value: Any) -> Any:
        return FaultConfig(mode=value) if isinstance(value, str) else value

    # -- LangChain plumbing ---------------------------------------------------------------------------------

    @property
    def _llm_type(self) -> str:
        return "offline-sales"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "latency_profile": self.latency_profile.name if self.latency_profile else None,
            "faults": self.faults.model_dump() if self.faults else None,
        }

    def _resolve_model_profile(self) -> ModelProfile | None:
        return ModelProfile(
            tool_calling=True, tool_choice=True, structured_output=True, text_inputs=True, text_outputs=True
        )

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = LangSmithParams(
            ls_provider="offline",
            ls_model_name=str(kwargs.get("model") or self.model_name),
            ls_model_type="chat",
            ls_temperature=kwargs.get("temperature", self.temperature),
        )
        if self.max_tokens is not None:
            params["ls_max_tokens"] = self.max_tokens
        if stop or self.stop:
            params["ls_stop"] = stop or self.stop
        return params

    @property
    def calls(self) -> int:
        """How many calls this instance has answered (the index fault decisions use)."""
        return self._calls

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (any form ``convert_to_openai_tool`` accepts).

        ``tool_choice``: ``None``/``"auto"`` (the model decides), ``"any"``/``"required"``/``True`` (some tool
        must be called), a tool name or ``{"type": "function", "function": {"name": …}}`` (that tool), or
        ``"none"``. Extra keyword arguments (e.g. ``response_format``) are passed to every call.
        """
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        method: StructuredMethod = "json_schema",
        include_raw: bool = False,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """Return a runnable that parses the reply into ``schema`` (pydantic class, TypedDict or dict).

        ``json_schema`` (default) sends the schema as ``response_format`` and parses JSON text; ``json_mode``
        asks for JSON without the schema (the prompt must say what to produce); ``function_calling`` forces a
        call to a tool whose arguments are the object. ``include_raw=True`` returns
        ``{"raw", "parsed", "parsing_error"}`` instead of raising on a parsing error.
        """
        if kwargs:
            raise ValueError(f"Received unsupported arguments {kwargs}")
        is_pydantic = isinstance(schema, type) and is_basemodel_subclass(schema)
        trace = {"kwargs": {"method": method, "strict": strict}, "schema": schema}
        parser: Runnable[Any, Any]
        if method == "function_calling":
            tool_name = convert_to_openai_tool(schema)["function"]["name"]
            llm = self.bind_tools([schema], tool_choice=tool_name, ls_structured_output_format=trace)
            parser = (
                PydanticToolsParser(tools=[schema], first_tool_only=True)  # type: ignore[list-item]
                if is_pydantic
                else JsonOutputKeyToolsParser(key_name=tool_name, first_tool_only=True)
            )
        elif method in ("json_mode", "json_schema"):
            if method == "json_mode":
                response_format: dict[str, Any] = {"type": "json_object"}
            else:
                json_schema = convert_to_json_schema(schema)
                response_format = {
                    "type": "json_schema",
                    "json_schema": {"name": json_schema.get("title", "output"), "schema": json_schema},
                }
            llm = self.bind(response_format=response_format, ls_structured_output_format=trace)
            parser = PydanticOutputParser(pydantic_object=schema) if is_pydantic else JsonOutputParser()  # type: ignore[arg-type]
        else:
            raise ValueError(
                f"Unrecognized method {method!r}; expected 'function_calling', 'json_mode' or 'json_schema'."
            )
        if include_raw:
            parser_assign = RunnablePassthrough.assign(
                parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
            )
            parser_none = RunnablePassthrough.assign(parsed=lambda _: None)
            parser_with_fallback = parser_assign.with_fallbacks([parser_none], exception_key="parsing_error")
            return RunnableMap(raw=llm) | parser_with_fallback
        return llm | parser

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._respond(messages, stop, kwargs)
        reply.check()
        return ChatResult(generations=[ChatGeneration(message=reply.message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The same reply as ``invoke``, in several chunks (see :func:`_chunks`); summed, they equal it."""
        reply = self._respond(messages, stop, kwargs)
        for chunk in reply.stream():
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """``_stream`` natively async: the event loop gets control back between chunks (nothing sleeps)."""
        reply = self._respond(messages, stop, kwargs)
        for chunk in reply.stream():
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
            await asyncio.sleep(0)

    # -- the reply ------------------------------------------------------------------------------------------

    def _respond(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> _Reply:
        """The call's reply (or the fault it raises before any), with where a ``stream_break`` cuts it."""
        with self._lock:
            index = self._calls
            self._calls += 1
        fault = self.faults.mode if self.faults and self.faults.strikes(index) else None
        if fault == "provider_error":
            raise OfflineProviderError(
                f"Simulated provider failure on call {index} (fault mode provider_error)."
            )
        if fault == "timeout":
            raise OfflineProviderTimeout(
                f"Simulated request timeout on call {index} (fault mode timeout).", timeout=self.timeout
            )
        request = _read_request(kwargs)
        view = read_prompt(messages)
        draft = _decide(view, request)
        if fault is not None and fault != "stream_break":
            tools_bound = bool(request.tools) and request.tool_choice != "none"
            site = FaultSite(
                call_index=index,
                kind=None if tools_bound else request_kind(view, request.schema),
                tools_bound=tools_bound,
                catalog=catalog_names(view),
            )
            draft = inject(draft, fault, site)
        content, finish_reason = draft.content, "tool_calls" if draft.tool_calls else "stop"
        for sequence in stop or self.stop or []:
            if sequence and sequence in content:
                content = content[: content.index(sequence)]
        cap = kwargs.get("max_tokens", self.max_tokens)
        if draft.repeat:
            content = grow(content, draft.repeat, cap if cap is not None else RUNAWAY_CONTEXT_TOKENS)
            cap = cap if cap is not None else RUNAWAY_CONTEXT_TOKENS
        tool_calls, invalid_calls = draft.tool_calls, draft.invalid_calls
        if cap is not None and _output_tokens(content, tool_calls, invalid_calls) > cap:
            # Cut like a real model: the text ends at the cap, and tool calls still being written are only
            # text (never valid calls: LangChain would complete partial JSON into a call in a stream).
            written = content + "".join(
                ("\n" if content or i else "")
                + json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
                for i, (name, args) in enumerate(tool_calls)
            )
            content, finish_reason = cut_to_tokens(written, cap), "length"
            tool_calls, invalid_calls = [], []

        calls = [
            tool_call(name=name, args=args, id=f"call_{index}_{i}")
            for i, (name, args) in enumerate(tool_calls)
        ]
        invalid = [
            # error=None: what LangChain's reassembly of streamed chunks reports, so invoke and stream agree.
            invalid_tool_call(name=name, args=args, id=f"call_{index}_{len(calls) + i}", error=None)
            for i, (name, args) in enumerate(invalid_calls)
        ]
        profile = self.latency_profile
        blocks = prompt_blocks(
            messages, kwargs, schema_in_prompt=profile is None or not profile.schema_as_grammar
        )
        input_tokens = sum(block.tokens for block in blocks)
        cached_tokens = self._prompt_cache.read(blocks)  # the prompt was sent: the cache has seen it
        output_tokens = _output_tokens(content, tool_calls, invalid_calls)
        if finish_reason == "length" and cap is not None:
            output_tokens = cap
        metadata: dict[str, Any] = {
            "model_name": str(kwargs.get("model") or self.model_name),
            "model_provider": "offline",
            "finish_reason": finish_reason,
        }
        if profile is not None:
            metadata["simulated_latency_ms"] = profile.latency_ms(input_tokens, output_tokens, cached_tokens)
            metadata["simulated_first_token_ms"] = profile.first_token_ms(input_tokens, cached_tokens)
            metadata["simulated_ms_per_token"] = round(profile.ms_per_output_token, 3)
        message = AIMessage(
            content=content,
            tool_calls=calls,
            invalid_tool_calls=invalid,
            usage_metadata={
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
                "input_token_details": {"cache_read": cached_tokens},
            },
            response_metadata=metadata,
        )
        return _Reply(message=message, call_index=index, breaks=fault == "stream_break")


# -- decisions ----------------------------------------------------------------------------------------------


def _output_tokens(
    content: str, tool_calls: list[tuple[str, dict[str, Any]]], invalid_calls: list[tuple[str, str]]
) -> int:
    return (
        approx_tokens(content)
        + sum(approx_json_tokens({"name": name, "arguments": args}) for name, args in tool_calls)
        + sum(approx_tokens(f"{name}{args}") for name, args in invalid_calls)
    )


def _available(view: PromptView) -> set[str]:
    """The operations a plan may use: those the prompt's catalog offers (the question cannot add one)."""
    return set(catalog_names(view))


def _decide(view: PromptView, request: _Request) -> Draft:
    if request.tools and request.tool_choice != "none":
        return _tool_step(view, request)
    kind = schema_kind(request.schema) if request.schema is not None else prompt_kind(view)
    compact = view.compact_json
    if kind == "plan":
        return Draft.json(_conformed(_plan(view, request.schema), request.schema), compact=compact)
    if kind == "answer":
        return Draft.json(_conformed(_answer(view), request.schema), compact=compact)
    if request.schema is not None:
        return Draft.json(fill(request.schema, request.schema), compact=compact)
    if request.json_mode:
        keys = re.findall(r"['\"](\w+)['\"]", view.human)
        if keys:
            return Draft.json({key: f"(offline) {key}" for key in dict.fromkeys(keys)}, compact=compact)
        return Draft.json({"respuesta": _plain_reply(view)}, compact=compact)
    return Draft(content=_plain_reply(view))


def _conformed(payload: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    return conform(payload, schema, schema) if schema else payload


def _plan(view: PromptView, schema: dict[str, Any] | None) -> dict[str, Any]:
    available = _available(view)
    named = _schema_operations(schema)
    if named is not None:  # a schema that names the operations (the planner's enum) narrows the catalog
        available &= named
    understanding = understand(view.question, view.conversation, available)
    with_ids = "$ref" in view.all_text or _items_have_id(schema)
    steps = [s for s in understanding.steps if with_ids or s.needs is None]
    referenced = {s.needs for s in steps if s.needs is not None}
    # An ``id`` only on a step another step references: a model writes no more than the plan needs.
    operations = [
        ({"id": s.key} if s.key in referenced else {}) | {"funcion": s.funcion, "parametros": s.parametros}
        for s in steps
    ]
    direct = not operations and (
        "respuesta_directa" in view.all_text or mentions(schema, "respuesta_directa")
    )
    plan: dict[str, Any] = {}
    if not direct or not _direct_answer_alone(view, schema):
        plan["operaciones"] = operations
    if mentions(schema, "pregunta"):  # the article's key, written only when the schema asks for it
        plan["pregunta"] = view.question
    if direct:
        plan["respuesta_directa"] = understanding.reply or "¿En qué puedo ayudarte con las ventas?"
    if schema is None:  # no schema to follow (it would order the keys): the order the prompt names them in
        plan = dict(sorted(plan.items(), key=lambda item: _first_mention(view.system, item[0])))
    return plan


_DIRECT_ALONE = re.compile(r'\{\s*"respuesta_directa"\s*:')


def _direct_answer_alone(view: PromptView, schema: dict[str, Any] | None) -> bool:
    """Whether a direct answer is written without ``"operaciones": []``: the prompt shows one alone
    (``{"respuesta_directa": …}``) and the schema, if any, does not require ``operaciones``."""
    required = resolve(schema, schema).get("required") if schema else None
    if isinstance(required, list) and "operaciones" in required:
        return False
    return _DIRECT_ALONE.search(view.all_text) is not None


def _first_mention(text: str, key: str) -> int:
    """Where ``text`` first names the quoted ``key`` (after every named key when it does not)."""
    found = text.find(f'"{key}"')
    return found if found >= 0 else len(text)


def _operation_items(schema: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The schemas a plan's operation may follow: the ``operaciones`` items, one per branch of a union
    (the planner's schema has one branch per operation, :mod:`planner_mode.plan_schema`)."""
    if not schema:
        return []
    operations = resolve(properties(schema).get("operaciones") or {}, schema)
    items = operations.get("items")
    return alternatives(items, schema) if isinstance(items, dict) else []


def _items_have_id(schema: dict[str, Any] | None) -> bool:
    """Whether a plan schema's operation items declare an ``id`` (the planner's ``$ref`` extension)."""
    return any("id" in (item.get("properties") or {}) for item in _operation_items(schema))


def _schema_operations(schema: dict[str, Any] | None) -> set[str] | None:
    """The operation names a plan schema allows in ``funcion`` (an ``enum`` per item or per branch), or
    ``None`` when it allows any string (or is no plan schema)."""
    items = _operation_items(schema)
    if not items or schema is None:
        return None
    if (resolve(properties(schema).get("operaciones") or {}, schema)).get("maxItems") == 0:
        return set()
    names: set[str] = set()
    for item in items:
        funcion = (item.get("properties") or {}).get("funcion")
        values = enum_values(funcion, schema) if isinstance(funcion, dict) else None
        if values is None:
            return None
        names.update(str(value) for value in values)
    return names


def _answer(view: PromptView) -> dict[str, Any]:
    items = [
        Executed(
            funcion=str(r.get("funcion", "")),
            parametros=dict(r["parametros"]) if isinstance(r.get("parametros"), dict) else {},
            resultado=r.get("resultado"),
            error=None if r.get("error") is None else str(r["error"]),
        )
        for r in view.results or []
    ]
    fallback = None
    if not items:
        fallback = understand(view.question, view.conversation, frozenset(KNOWN_OPERATIONS)).reply or None
    return compose_answer(items, view.conversation, fallback)


def _plain_reply(view: PromptView) -> str:
    if view.results:
        return str(_answer(view)["respuesta"])
    understanding = understand(view.question, view.conversation, frozenset(KNOWN_OPERATIONS))
    if understanding.kind == "operations":
        return (
            "Para responder necesito consultar el ERP, y en esta llamada no tengo herramientas ni "
            "resultados: "
            "pregúntame a través del asistente de ventas."
        )
    return understanding.reply


# -- tool calling -------------------------------------------------------------------------------------------


def _tool_step(view: PromptView, request: _Request) -> Draft:
    specs = request.tools
    answer_tool = next((t for t in specs if schema_kind(t.parameters) == "answer"), None)
    data_tools = [t for t in specs if t is not answer_tool]
    sales = {t.name for t in data_tools if t.name in KNOWN_OPERATIONS}
    generic = [t for t in data_tools if t.name not in KNOWN_OPERATIONS]
    by_name = {t.name: t for t in specs}
    choice = request.tool_choice
    data_calls = [c for c in view.turn_calls if answer_tool is None or c.name != answer_tool.name]

    forced = by_name.get(choice) if choice not in (None, "auto", "required") else None
    if forced is not None and (forced is not answer_tool or not data_tools):
        return _forced_call(view, forced)
    if answer_tool is not None and view.results is not None:
        return _final(_answer(view), request, answer_tool, compact=view.compact_json)

    understanding = understand(view.question, view.conversation, sales)
    if understanding.kind == "operations":
        issued = _match_calls(list(understanding.steps), data_calls)
        batch = _next_batch(list(understanding.steps), issued)
        if batch:
            return Draft(tool_calls=[(s.funcion, _fit(s.parametros, by_name[s.funcion])) for s in batch])
        items = [_executed(issued[s.key]) for s in understanding.steps if s.key in issued]
        return _final(
            compose_answer(items, view.conversation, understanding.reply or None),
            request,
            answer_tool,
            compact=view.compact_json,
        )

    if not data_calls:
        found = explicit_call(view.question, generic)
        if found is None:
            spec = named_tool(view.question, generic)
            if spec is None and choice == "required" and answer_tool is None and data_tools:
                spec = data_tools[0]
            found = (spec, arguments(spec, view.question)) if spec else None
        if found is not None:
            return Draft(tool_calls=[(found[0].name, found[1])])
        reply = compose_answer([], view.conversation, understanding.reply)
        return _final(reply, request, answer_tool, compact=view.compact_json)
    text = " ".join(
        describe(_executed(c)) if c.name in KNOWN_OPERATIONS else f"Resultado de {c.name}: {c.result}"
        for c in data_calls
    )
    payload = {"respuesta": text, "memoria": [], "estado": {}}
    return _final(payload, request, answer_tool, compact=view.compact_json)


def _forced_call(view: PromptView, spec: ToolSpec) -> Draft:
    kind = schema_kind(spec.parameters)
    if kind == "plan":
        return Draft(tool_calls=[(spec.name, _conformed(_plan(view, spec.parameters), spec.parameters))])
    if kind == "answer":
        return Draft(tool_calls=[(spec.name, _conformed(_answer(view), spec.parameters))])
    if spec.name in KNOWN_OPERATIONS:
        understanding = understand(view.question, view.conversation, {spec.name})
        for step in understanding.steps:
            if step.funcion == spec.name and step.needs is None:
                return Draft(tool_calls=[(spec.name, _fit(step.parametros, spec))])
    found = explicit_call(view.question, [spec])
    args = found[1] if found else arguments(spec, view.question, all_properties=True)
    return Draft(tool_calls=[(spec.name, args)])


def _final(
    payload: dict[str, Any], request: _Request, answer_tool: ToolSpec | None, *, compact: bool
) -> Draft:
    """The turn's answer: a call to the answer tool, JSON (``compact`` when the prompt's examples are), or
    the plain ``respuesta`` text."""
    if answer_tool is not None:
        return Draft(
            tool_calls=[(answer_tool.name, conform(payload, answer_tool.parameters, answer_tool.parameters))]
        )
    if request.schema is not None:
        if schema_kind(request.schema) == "answer":
            return Draft.json(conform(payload, request.schema, request.schema), compact=compact)
        return Draft.json(fill(request.schema, request.schema), compact=compact)
    if request.json_mode:
        return Draft.json(payload, compact=compact)
    return Draft(content=str(payload["respuesta"]))


def _fit(params: dict[str, Any], spec: ToolSpec) -> dict[str, Any]:
    """Keep only the parameters the tool declares (all of them when it declares none)."""
    names = spec.property_names
    return {k: v for k, v in params.items() if not names or k in names}


def _match_calls(steps: list[Step], calls: list[TurnCall]) -> dict[str, TurnCall]:
    """Which step each call of this turn carried out: by name first, then unmatched calls in order."""
    issued: dict[str, TurnCall] = {}
    unused = list(calls)
    for step in steps:
        for call in unused:
            if call.name == step.funcion:
                issued[step.key] = call
                unused.remove(call)
                break
    for step in steps:
        if step.key not in issued and unused:
            issued[step.key] = unused.pop(0)
    return issued


def _next_batch(steps: list[Step], issued: dict[str, TurnCall]) -> list[Step]:
    """Steps not yet called whose inputs are ready; a step whose dependency failed is dropped."""
    batch: list[Step] = []
    for step in steps:
        if step.key in issued:
            continue
        if step.needs is None:
            batch.append(step)
            continue
        dependency = issued.get(step.needs)
        if dependency is None or dependency.result is None or dependency.is_error:
            continue
        value = _result_field(dependency.result, "cliente")
        if value is None:
            continue
        params = {
            k: (value if isinstance(v, dict) and "$ref" in v else v) for k, v in step.parametros.items()
        }
        batch.append(Step(key=step.key, funcion=step.funcion, parametros=params))
    return batch


def _result_field(result: str, key: str) -> Any:
    try:
        data = json.loads(result)
    except json.JSONDecodeError:
        return None
    return data.get(key) if isinstance(data, dict) else None


def _executed(call: TurnCall) -> Executed:
    if call.is_error or call.result is None:
        return Executed(call.name, call.args, error=call.result or "sin respuesta de la herramienta")
    try:
        result: Any = json.loads(call.result)
    except json.JSONDecodeError:
        result = call.result
    return Executed(call.name, call.args, resultado=result)
