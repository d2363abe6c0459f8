"""One fake chat model for the whole test suite, after pydantic-ai's ``FunctionModel``.

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

Domain helpers (toy registries, scripted replies, emulator responders) live in each test package's own
``*_fakes`` module and build on this one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage, UsageMetadata
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import BaseModel, Field, PrivateAttr

__all__ = ["CallInfo", "FunctionChatModel", "ModelFunction"]

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
