"""Helpers for the emulator tests: a scripted responder for :mod:`tests.fakes`'s ``FunctionChatModel`` and
the real client of each protocol.

``FunctionChatModel(scripted_responder)`` stands behind the emulator servers, so the tests control exactly
what the server answers, independent of the offline model.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from benchmarks.stand_ins.emulators import DELAY_HEADER, FAULT_HEADER, EmulatorServer
from tests.fakes import CallInfo


class SamplePlan(BaseModel):
    """A miniature plan schema for structured output (the scripted responder fills it from the schema)."""

    operaciones: list[str]
    anio: int


def ventas_anuales(anio: int) -> dict[str, Any]:
    """Total de ventas de un año.

    Args:
        anio: El año.
    """
    return {"anio": anio}


def mejor_cliente(anio: int) -> dict[str, Any]:
    """El cliente que más compró en un año.

    Args:
        anio: El año.
    """
    return {"anio": anio}


TOOLS = [ventas_anuales, mejor_cliente]

GEMINI_KEY = "test-key"
"""The only API key the session's Gemini emulator accepts."""


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


MODELS = {"ollama": "llama3.1:8b", "gemini": "gemini-2.5-flash", "openai": "gpt-4o-mini"}
"""The model each protocol's client asks for."""


def client(
    server: EmulatorServer, *, fault: str | None = None, timeout: float | None = None, **kw: Any
) -> Any:
    """The real LangChain client of ``server``'s protocol; a ``fault`` is asked for with the request header
    (a ``slow`` one waits 0.5 s). OpenAI asks for usage in streams, retries are off."""
    headers = {FAULT_HEADER: fault, DELAY_HEADER: "0.5"} if fault else {}
    kind, base_url = server.protocol.name, server.base_url
    if kind == "ollama":
        options = {"headers": headers} | ({"timeout": timeout} if timeout is not None else {})
        return ChatOllama(model=MODELS[kind], base_url=base_url, client_kwargs=options, **kw)
    if kind == "openai":
        kw.setdefault("stream_usage", True)
        return ChatOpenAI(
            model=MODELS[kind], base_url=f"{base_url}/v1", api_key="sk-test", max_retries=0,
            default_headers=headers, timeout=timeout, **kw,
        )  # fmt: skip
    return ChatGoogleGenerativeAI(
        model=MODELS[kind], google_api_key=kw.pop("key", GEMINI_KEY), base_url=base_url, max_retries=1,
        additional_headers=headers or None, timeout=timeout, **kw,
    )  # fmt: skip


CAP = {"ollama": "num_predict", "gemini": "max_output_tokens", "openai": "max_tokens"}
"""Each client's output-cap option."""
LENGTH = {
    "ollama": ("done_reason", "length"),
    "gemini": ("finish_reason", "MAX_TOKENS"),
    "openai": ("finish_reason", "length"),
}
"""Where each client reports a reply cut at the cap."""


def capped(server: EmulatorServer, tokens: int, **kw: Any) -> Any:
    """:func:`client` with its output cap set to ``tokens``."""
    return client(server, **{CAP[server.protocol.name]: tokens}, **kw)


def cut_at_cap(server: EmulatorServer, reply: Any) -> bool:
    """Whether ``server``'s client reports ``reply`` as cut at the cap."""
    key, value = LENGTH[server.protocol.name]
    return bool(reply.response_metadata.get(key) == value)
