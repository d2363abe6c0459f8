"""The test suite's shared fakes, around one chat model after pydantic-ai's ``FunctionModel``.

A test writes a plain function ``(messages, info) -> AIMessage | str``; :class:`FunctionChatModel` turns it
into a LangChain ``BaseChatModel`` that answers with it and records every call as a :class:`CallInfo`::

    def reply(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        return "Hola." if not info.tools else AIMessage("", tool_calls=[...])

    model = FunctionChatModel(reply)
    ...
    assert model.call_count == 1 and model.calls[0].tool_names == ["ventas_anuales"]

``bind_tools`` and ``with_structured_output`` return bindings of the *same* model (``self.bind(...)``), not
copies, so every call made through them lands in one ``model.calls`` list, and replacing ``model.function``
mid-test changes what every binding answers. Each reply carries ``usage_metadata`` (the function's own, else
the model's fixed ``usage``, else a word count) and ``response_metadata["model_name"]``.

:class:`StreamingChatModel` is the same model streaming its replies as a provider does; :class:`RunRecorder`
records the runs callbacks see; :func:`toy_operations` gives the toy registries of the engine tests their
shapes. Domain helpers (scripted replies, handlers, emulator responders) live in each test package's own
``*_fakes`` module and build on this one.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    SystemMessage,
    ToolMessage,
    UsageMetadata,
)
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult, LLMResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import BaseModel, Field, PrivateAttr
from sqlalchemy.orm import Session

from shared.operations.registry import Operation

__all__ = [
    "CallInfo",
    "FunctionChatModel",
    "ModelFunction",
    "Run",
    "RunRecorder",
    "StreamingChatModel",
    "toy_operations",
]

_SCHEMA_KWARG = "structured_output_schema"
"""The bound keyword that carries a ``with_structured_output`` schema from the binding to ``_generate``."""


@dataclass(frozen=True)
class CallInfo:
    """One call the model received: the messages, and everything bound to the model besides them."""

    index: int
    """0 for the first call of the model's life (or since ``calls.clear()``), then 1, 2, …"""
    messages: list[BaseMessage]
    """The prompt, in order."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """Tools bound with ``bind_tools``, in OpenAI format (``{"type": "function", "function": {...}}``)."""
    tool_choice: Any = None
    """The ``tool_choice`` given to ``bind_tools`` (``None``, ``"any"``, ``"auto"`` or a tool name)."""
    response_format: Any = None
    """A provider-native ``response_format`` bound by the caller (LangChain's ``ProviderStrategy``)."""
    schema: dict[str, Any] | None = None
    """The JSON schema requested with ``with_structured_output``; ``None`` for a plain call."""

    @property
    def tool_names(self) -> list[str]:
        """Names of the bound tools, in binding order."""
        return [tool["function"]["name"] for tool in self.tools]

    @property
    def system(self) -> str:
        """Text of the leading system message, or ``""`` when there is none."""
        first = self.messages[0] if self.messages else None
        return str(first.content) if isinstance(first, SystemMessage) else ""

    @property
    def tool_results(self) -> list[ToolMessage]:
        """Tool results since the last human message (this turn's results so far)."""
        results: list[ToolMessage] = []
        for message in reversed(self.messages):
            if message.type == "human":
                break
            if isinstance(message, ToolMessage):
                results.insert(0, message)
        return results


ModelFunction = Callable[[list[BaseMessage], CallInfo], AIMessage | str]
"""What a test writes: the prompt and the call's :class:`CallInfo` in, the reply (message or text) out."""


class FunctionChatModel(BaseChatModel):
    """A chat model whose every reply is ``function(messages, info)``; it records each call in ``calls``.

    Construct it with the function first: ``FunctionChatModel(reply)`` or ``FunctionChatModel(reply,
    usage=..., native_structured_output=False)``.
    """

    function: ModelFunction
    """Computes each reply; may be replaced mid-test (bindings see the new one)."""
    calls: list[CallInfo] = Field(default_factory=list)
    """Every call, in order, including those made through ``bind_tools`` / ``with_structured_output``."""
    usage: UsageMetadata | None = None
    """Fixed usage reported for every reply; ``None`` counts words (prompt words in, reply words out)."""
    native_structured_output: bool = True
    """``False`` models a provider without structured output: ``with_structured_output`` raises
    ``NotImplementedError``, so callers fall back to asking for plain text."""
    model_name: str = "function-fake"
    """Reported as ``response_metadata["model_name"]``."""

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, function: ModelFunction | None = None, /, **data: Any) -> None:
        if function is not None:
            data["function"] = function
        super().__init__(**data)

    @property
    def _llm_type(self) -> str:
        return "function-fake"

    @property
    def call_count(self) -> int:
        """How many times the model was called."""
        return len(self.calls)

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """The messages of every call, in order."""
        return [call.messages for call in self.calls]

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """``bound model | parser``, the shape providers return; ``method`` and other options are accepted."""
        if not self.native_structured_output:
            raise NotImplementedError("this FunctionChatModel has no native structured output")
        if include_raw:
            raise NotImplementedError("FunctionChatModel does not implement include_raw=True")
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            json_schema = schema.model_json_schema()
            parser: Runnable[Any, Any] = PydanticOutputParser(pydantic_object=schema)
        else:
            json_schema = dict(schema) if isinstance(schema, dict) else convert_to_json_schema(schema)
            parser = JsonOutputParser()
        return self.bind(**{_SCHEMA_KWARG: json_schema}) | parser

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:  # emulator servers call from several threads: keep indexes and order consistent
            info = CallInfo(
                index=len(self.calls),
                messages=list(messages),
                tools=list(kwargs.get("tools") or []),
                tool_choice=kwargs.get("tool_choice"),
                response_format=kwargs.get("response_format"),
                schema=kwargs.get(_SCHEMA_KWARG),
            )
            self.calls.append(info)
        reply = self.function(list(messages), info)
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
        if message.usage_metadata is None:  # the function's own usage wins, then the fixed one, then words
            fixed = UsageMetadata(**self.usage) if self.usage else None
            message.usage_metadata = fixed or _count_words(messages, message)
        message.response_metadata.setdefault("model_name", self.model_name)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _count_words(messages: Sequence[BaseMessage], reply: AIMessage) -> UsageMetadata:
    """Usage as words: the prompt's words in; the reply's words plus one per tool call out."""
    input_tokens = sum(len(m.text.split()) for m in messages)
    output_tokens = len(reply.text.split()) + len(reply.tool_calls)
    return UsageMetadata(
        input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens
    )


class StreamingChatModel(FunctionChatModel):
    """A :class:`FunctionChatModel` that streams each reply as a provider does: its text in pieces (``piece``
    characters each, word by word when ``None``), then its tool calls in one chunk, then an empty last chunk
    with the usage and the response metadata (finish reason).

    ``break_after=n`` raises ``failure`` (a dropped connection) in place of text piece ``n``: a reply longer
    than ``n`` pieces fails midway.
    """

    piece: int | None = None
    break_after: int | None = None
    failure: type[Exception] = ConnectionError

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._generate(messages, stop, **kwargs).generations[0].message
        assert isinstance(reply, AIMessage)
        text, size = reply.text, self.piece
        pieces = (
            re.findall(r"\S+\s*|\s+", text)
            if size is None
            else [text[i : i + size] for i in range(0, len(text), size)]
        )
        for index, piece in enumerate(pieces):
            if index == self.break_after:
                raise self.failure("the connection to the model broke")
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        calls = [
            tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
            for i, c in enumerate(reply.tool_calls)
        ]
        if calls:
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=calls))
        last = AIMessageChunk(
            content="",
            usage_metadata=reply.usage_metadata,
            response_metadata=reply.response_metadata,
            chunk_position="last",
        )
        yield ChatGenerationChunk(message=last)


@dataclass
class Run:
    """One run a callback handler saw: a chain's inputs and outputs, or a chat model's prompt and reply."""

    run_id: UUID
    parent: UUID | None
    name: str | None
    tags: list[str]
    metadata: dict[str, Any]
    inputs: Any
    """A chain's inputs; a chat model's messages."""
    outputs: Any = None
    """A chain's outputs; a chat model's ``LLMResult``."""
    error: BaseException | None = None


class RunRecorder(BaseCallbackHandler):
    """Every chain and chat-model run, in the order they start, as a tracing handler (LangSmith,
    OpenTelemetry) sees them; ``ended`` holds the model runs in the order they end."""

    def __init__(self) -> None:
        self.chains: list[Run] = []
        self.models: list[Run] = []
        self.ended: list[Run] = []
        self._runs: dict[UUID, Run] = {}
        self._lock = threading.Lock()

    def _start(
        self, runs: list[Run], run_id: UUID, parent: UUID | None, inputs: Any, kw: dict[str, Any]
    ) -> None:
        run = Run(
            run_id, parent, kw.get("name"), list(kw.get("tags") or []), dict(kw.get("metadata") or {}), inputs
        )
        with self._lock:
            runs.append(run)
            self._runs[run_id] = run

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._start(self.chains, run_id, parent_run_id, inputs, kw)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._start(self.models, run_id, parent_run_id, list(messages[0]), kw)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kw: Any) -> None:
        self._runs[run_id].outputs = outputs

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kw: Any) -> None:
        with self._lock:
            self._runs[run_id].outputs = response
            self.ended.append(self._runs[run_id])

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kw: Any) -> None:
        self._runs[run_id].error = error

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kw: Any) -> None:
        self._runs[run_id].error = error

    def roots(self) -> list[Run]:
        return [run for run in self.chains if run.parent is None]

    def root_of(self, run_id: UUID | None) -> UUID | None:
        """The chain at the top of ``run_id``'s ancestors."""
        while run_id in self._runs and self._runs[run_id].parent is not None:
            run_id = self._runs[run_id].parent
        return run_id

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """The messages of every model call, in the order they started."""
        return [run.inputs for run in self.models]

    @property
    def replies(self) -> list[str]:
        """The text of every model reply, in the order they ended (before any parsing)."""
        return [run.outputs.generations[0][0].text for run in self.ended]

    @property
    def usages(self) -> list[tuple[int, int]]:
        """``(input_tokens, cache_read)`` of every model call that reported usage, in the order they ended."""
        found = [
            gen.message.usage_metadata
            for run in self.ended
            for gens in run.outputs.generations
            for gen in gens
            if isinstance(gen, ChatGeneration)
        ]
        return [
            (usage["input_tokens"], usage["input_token_details"]["cache_read"]) for usage in found if usage
        ]


# -- the toy registry's shapes: three operations whose results tests can predict ---------------------------


class YearParams(BaseModel):
    anio: int = Field(description="Año.")


class YearTotal(BaseModel):
    anio: int
    total: int


class BestCustomer(BaseModel):
    anio: int
    cliente: str
    total: int


class CustomerParams(BaseModel):
    cliente: str = Field(description="Nombre del cliente.")
    anio: int = Field(description="Año.")


class CustomerTotal(BaseModel):
    cliente: str
    anio: int
    total: int


def toy_operations(
    ventas: Callable[[Session, YearParams], YearTotal],
    mejor: Callable[[Session, YearParams], BestCustomer],
    compras: Callable[[Session, CustomerParams], CustomerTotal],
) -> list[Operation[Any, Any]]:
    """``ventas_anuales``, ``mejor_cliente`` and ``compras_cliente``, answered by the given handlers."""
    return [
        Operation("ventas_anuales", "Total de ventas de un año.", YearParams, YearTotal, ventas),
        Operation("mejor_cliente", "Cliente que más compró en un año.", YearParams, BestCustomer, mejor),
        Operation(
            "compras_cliente",
            "Total comprado por un cliente en un año.",
            CustomerParams,
            CustomerTotal,
            compras,
        ),
    ]
