"""A small, readable chat model for the emulator tests, driven by a plain function (like pydantic-ai's
``FunctionModel``): the tests control exactly what stands behind the server, independent of the offline model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

GEMINI_KEY = "test-key"
"""The only API key the session's Gemini emulator accepts."""


@dataclass(frozen=True)
class CallInfo:
    """What the fake model was given besides the messages."""

    tools: list[dict[str, Any]]
    tool_choice: Any
    schema: dict[str, Any] | None


Responder = Callable[[list[BaseMessage], CallInfo], AIMessage]


def sample_for(schema: dict[str, Any]) -> Any:
    """A value that satisfies a simple JSON schema (objects, arrays, scalars)."""
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {name: sample_for(sub) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [sample_for(schema.get("items", {"type": "string"}))]
    if kind == "integer":
        return 2025
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    return "Empresa ABC"


def scripted_responder(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    """Schema → a sample JSON object; tools and a new question → one call; tool result → an answer."""
    last = messages[-1]
    if info.schema is not None:
        return AIMessage(content=json.dumps(sample_for(info.schema)))
    if info.tools and isinstance(last, HumanMessage):
        name = info.tool_choice if info.tool_choice not in (None, "any", "auto") else None
        name = name or info.tools[0]["function"]["name"]
        return AIMessage(content="", tool_calls=[{"name": name, "args": {"anio": 2025}, "id": "fake_1"}])
    if isinstance(last, ToolMessage):
        return AIMessage(content=f"Resultado de {last.name}: {last.content}")
    return AIMessage(content=f"Hola. Dijiste: {last.text}")


class FunctionChatModel(BaseChatModel):
    """A chat model whose replies come from ``responder``; it records every call it receives."""

    responder: Responder = scripted_responder
    bound_tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_choice: Any = None
    schema_: dict[str, Any] | None = None
    calls: list[tuple[list[BaseMessage], CallInfo]] = Field(default_factory=list)
    """Every call, shared with the copies ``bind_tools`` / ``with_structured_output`` make."""

    @property
    def _llm_type(self) -> str:
        return "function-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        info = CallInfo(tools=self.bound_tools, tool_choice=self.tool_choice, schema=self.schema_)
        self.calls.append((list(messages), info))
        message = self.responder(list(messages), info)
        if message.usage_metadata is None:
            prompt = sum(len(m.text.split()) for m in messages)
            output = len(message.text.split()) + len(message.tool_calls)
            message.usage_metadata = {
                "input_tokens": prompt,
                "output_tokens": output,
                "total_tokens": prompt + output,
            }
        message.response_metadata["model_name"] = "function-fake"
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.model_copy(
            update={"bound_tools": [convert_to_openai_tool(t) for t in tools], "tool_choice": tool_choice}
        )

    def with_structured_output(self, schema: Any, *, include_raw: bool = False, **kwargs: Any) -> Any:
        assert isinstance(schema, dict), "the emulators always pass a JSON schema dict"
        return self.model_copy(update={"schema_": schema}) | JsonOutputParser()
