"""``OfflineSalesModel``: a deterministic LangChain chat model that plays an LLM for the sales assistant.

A stand-in for the benchmark, demos and tests, not a measure of model quality. It reads only the messages,
tools and response format it is sent (never the ERP, the registry or the benchmark) and replies as
:mod:`._decide` decides. Token counts follow :mod:`shared.llm.tokens`; ``cache_read`` is what the modelled
prefix cache (:mod:`._cache`) would serve; a latency profile adds ``simulated_*`` timings to
``response_metadata``; a :class:`~benchmarks.stand_ins.faults.FaultConfig` makes chosen calls misbehave.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
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
    FaultConfig,
    OfflineProviderError,
    OfflineProviderTimeout,
    OfflineStreamBreak,
)
from benchmarks.stand_ins.latency import LatencyProfile, resolve_latency_profile
from benchmarks.stand_ins.offline._cache import DEFAULT_PROMPT_CACHE_SIZE, PrefixCache, prompt_blocks
from benchmarks.stand_ins.offline._decide import decide, read_request
from benchmarks.stand_ins.offline._faults import FaultSite, inject
from benchmarks.stand_ins.offline._prompt import read_prompt
from benchmarks.stand_ins.output_cap import fit_reply, reply_tokens
from shared.llm.tokens import approx_tokens

StructuredMethod = Literal["function_calling", "json_mode", "json_schema"]


@dataclass(frozen=True)
class _Reply:
    """One call's finished reply, and whether the ``stream_break`` fault cuts it midway."""

    message: AIMessage
    call_index: int
    breaks: bool = False

    def stream(self) -> Iterator[ChatGenerationChunk]:
        """The reply's chunks; a breaking reply sends the first half of its pieces (at least one, never the
        last chunk with the usage), then raises :class:`OfflineStreamBreak`."""
        chunks = _chunks(self.message)
        if not self.breaks:
            yield from chunks
            return
        sent = chunks[:-1][: max(1, (len(chunks) - 1) // 2)]
        yield from sent
        usage = self.message.usage_metadata
        raise OfflineStreamBreak(
            f"Simulated dropped connection on call {self.call_index} after {len(sent)} streamed chunks "
            "(fault mode stream_break).",
            input_tokens=usage["input_tokens"] if usage else 0,
            output_tokens=sum(_chunk_tokens(chunk) for chunk in sent),
        )


def _chunks(message: AIMessage) -> list[ChatGenerationChunk]:
    """``message`` as a streaming server sends it (the chunks add up to ``message``): the text's pieces, then
    each tool call's pieces under its ``index``, then an empty last chunk with usage and metadata."""
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
    last = AIMessageChunk(
        content="",
        usage_metadata=message.usage_metadata,
        response_metadata=message.response_metadata,
        chunk_position="last",
    )
    return [*chunks, ChatGenerationChunk(message=last)]


def _chunk_tokens(chunk: ChatGenerationChunk) -> int:
    parts = getattr(chunk.message, "tool_call_chunks", None) or []
    return approx_tokens(chunk.text) + approx_tokens("".join(str(p.get("args") or "") for p in parts))


class OfflineSalesModel(BaseChatModel):
    """A deterministic, offline chat model for the ERP sales assistant.

    Example:
        >>> model = OfflineSalesModel(latency_profile="gpu-8b")
        >>> model.invoke("Hola").content.startswith("¡Hola!")
        True
    """

    model_config = ConfigDict(populate_by_name=True)

    model_name: str = Field(default="offline-sales", alias="model")
    max_tokens: int | None = None
    """Output cap: a longer reply is cut there (``finish_reason="length"``, unfinished tool calls as text)."""
    stop: list[str] | None = None
    latency_profile: LatencyProfile | None = None
    """Modelled timing (a preset name or a profile); ``schema_as_grammar`` leaves the schema out of input."""
    faults: FaultConfig | None = None
    prompt_cache_size: int = Field(default=DEFAULT_PROMPT_CACHE_SIZE, ge=0)
    # Accepted for compatibility with real chat models; the model is deterministic and nothing waits.
    temperature: float = 0.0
    timeout: float | None = None
    max_retries: int = 2
    api_key: SecretStr | None = None
    streaming: bool = False

    _calls: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _prompt_cache: PrefixCache = PrivateAttr(default_factory=PrefixCache)

    def model_post_init(self, context: Any, /) -> None:
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
        """How many calls this instance has answered."""
        return self._calls

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools; ``tool_choice`` is ``None``/``"auto"``, ``"any"``/``"required"``/``True``, a tool name
        (or ``{"function": {"name": …}}``) or ``"none"``."""
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
        """A runnable that parses the reply into ``schema``: ``json_schema`` sends it as ``response_format``,
        ``json_mode`` asks for JSON only, ``function_calling`` forces a call to a tool of that schema."""
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
        if reply.breaks:  # unstreamed, a dropped connection returns nothing: the same error, same usage
            list(reply.stream())
        return ChatResult(generations=[ChatGeneration(message=reply.message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
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
        reply = self._respond(messages, stop, kwargs)
        for chunk in reply.stream():
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
            await asyncio.sleep(0)

    def _respond(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> _Reply:
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
        request = read_request(kwargs)
        view = read_prompt(messages)
        draft = decide(view, request)
        if fault is not None and fault != "stream_break":
            tools_bound = bool(request.tools) and request.tool_choice != "none"
            draft = inject(
                draft, fault, FaultSite.read(view, request.schema, tools_bound=tools_bound, call_index=index)
            )
        content = draft.content
        for sequence in stop or self.stop or []:
            if sequence and sequence in content:
                content = content[: content.index(sequence)]
        tool_calls, invalid_calls = draft.tool_calls, draft.invalid_calls
        invalid_tokens = sum(approx_tokens(f"{name}{args}") for name, args in invalid_calls)
        cap = kwargs.get("max_tokens", self.max_tokens)
        content, cut_at = fit_reply(
            content, tool_calls, cap, repeat=draft.repeat, other_tokens=invalid_tokens
        )
        if cut_at is None:
            finish_reason = "tool_calls" if tool_calls else "stop"
            output_tokens = reply_tokens(content, tool_calls) + invalid_tokens
        else:
            finish_reason, output_tokens, tool_calls, invalid_calls = "length", cut_at, [], []

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
