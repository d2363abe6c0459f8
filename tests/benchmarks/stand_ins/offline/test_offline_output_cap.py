"""The offline model's output cap: a reply longer than ``max_tokens`` is cut, like a real model's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.llm.tokens import approx_tokens
from tests.benchmarks.stand_ins.offline.offline_prompts import (
    QUESTION,
    answer_messages,
    invoked_and_streamed,
    outcome,
    plan_messages,
    tool_turn,
)

ANSWER_PROMPT = answer_messages(
    QUESTION, [outcome("ventas_anuales", anio=2025), outcome("mejor_cliente", anio=2025)]
)


class Plan(BaseModel):
    """A miniature plan schema."""

    operaciones: list[dict[str, Any]]


def full_answer() -> AIMessage:
    return OfflineSalesModel().invoke(ANSWER_PROMPT)


def test_a_reply_within_the_cap_is_whole_and_says_stop() -> None:
    full = full_answer()
    assert full.usage_metadata is not None
    capped = OfflineSalesModel(max_tokens=full.usage_metadata["output_tokens"]).invoke(ANSWER_PROMPT)

    assert capped.content == full.content
    assert capped.response_metadata["finish_reason"] == "stop"
    assert full.response_metadata["finish_reason"] == "stop"


def test_a_longer_reply_is_cut_at_the_cap_and_says_length() -> None:
    full = str(full_answer().content)
    reply = OfflineSalesModel(max_tokens=20).invoke(ANSWER_PROMPT)

    assert reply.response_metadata["finish_reason"] == "length"
    assert full.startswith(str(reply.content)) and approx_tokens(str(reply.content)) == 20
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] == 20
    assert reply.usage_metadata["total_tokens"] == reply.usage_metadata["input_tokens"] + 20
    with pytest.raises(json.JSONDecodeError):
        json.loads(str(reply.content))


def test_text_replies_are_cut_too() -> None:
    full = str(OfflineSalesModel().invoke("Hola").content)
    reply = OfflineSalesModel(max_tokens=3).invoke("Hola")

    assert reply.content == full[:12]
    assert reply.response_metadata["finish_reason"] == "length"


def test_a_per_call_max_tokens_overrides_the_models_cap() -> None:
    reply = OfflineSalesModel().bind(max_tokens=5).invoke(plan_messages(QUESTION))

    assert reply.response_metadata["finish_reason"] == "length"
    assert approx_tokens(str(reply.content)) == 5


def test_structured_output_is_cut_into_truncated_json_that_only_finish_reason_reveals() -> None:
    full = OfflineSalesModel().with_structured_output(Plan, include_raw=True).invoke(plan_messages(QUESTION))
    cut = (
        OfflineSalesModel(max_tokens=15)
        .with_structured_output(Plan, include_raw=True)
        .invoke(plan_messages(QUESTION))
    )

    assert isinstance(full, dict) and isinstance(cut, dict)
    assert cut["raw"].response_metadata["finish_reason"] == "length"
    assert str(full["raw"].content).startswith(str(cut["raw"].content))
    # LangChain's JSON parsers complete partial JSON, so the cut plan still parses, with an operation
    # missing its parameters: callers must check finish_reason, as with a real model.
    assert cut["parsed"] is not None and cut["parsed"] != full["parsed"]


def test_a_cut_tool_call_reply_carries_no_tool_calls(tools: list[StructuredTool]) -> None:
    model = OfflineSalesModel(max_tokens=12).bind_tools(tools)
    reply, streamed = invoked_and_streamed(model, tool_turn(QUESTION))

    for message in (reply, streamed):
        assert message.tool_calls == [] and message.invalid_tool_calls == []
        assert message.response_metadata["finish_reason"] == "length"
        assert str(message.content).startswith('{"name": "ventas_anuales", "arguments": {"anio"')
        assert approx_tokens(str(message.content)) == 12
    assert reply.usage_metadata is not None and reply.usage_metadata["output_tokens"] == 12


def test_tool_calls_within_the_cap_are_kept(tools: list[StructuredTool]) -> None:
    reply = OfflineSalesModel(max_tokens=200).bind_tools(tools).invoke(tool_turn(QUESTION))

    assert [c["name"] for c in reply.tool_calls] == ["ventas_anuales", "mejor_cliente"]
    assert reply.response_metadata["finish_reason"] == "tool_calls"
