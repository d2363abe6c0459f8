"""The offline model's prompt cache: a model of a prefix cache, reported as ``cache_read``.

The rule (``benchmarks.stand_ins.offline._cache``): a prompt is blocks (tools, response format, messages);
a call's cached tokens are those of its longest run of leading blocks equal to one recent prompt's, at most
``input_tokens - 1``.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool

from benchmarks.stand_ins.latency import LATENCY_PROFILES
from benchmarks.stand_ins.offline import OfflineSalesModel
from benchmarks.stand_ins.offline._cache import PrefixCache, PromptBlock, prompt_blocks
from shared.llm.tokens import MESSAGE_OVERHEAD_TOKENS, approx_tokens
from tests.benchmarks.stand_ins.offline.offline_prompts import PLAN_SYSTEM, merged, plan_messages, run_turn


def _usage(reply: AIMessage) -> tuple[int, int]:
    """``(input_tokens, cache_read)`` of a reply."""
    usage = reply.usage_metadata
    assert usage is not None
    return usage["input_tokens"], usage.get("input_token_details", {}).get("cache_read", -1)


def _system_tokens() -> int:
    return approx_tokens(PLAN_SYSTEM) + MESSAGE_OVERHEAD_TOKENS


def test_a_call_reuses_the_leading_blocks_of_an_earlier_prompt() -> None:
    model = OfflineSalesModel()
    assert _usage(model.invoke(plan_messages("¿Cuánto vendimos en 2025?")))[1] == 0  # nothing cached yet
    input_tokens, cached = _usage(model.invoke(plan_messages("¿Y en 2024?", state={"anio": 2025})))
    assert cached == _system_tokens() < input_tokens  # a new question after the same system prompt
    input_tokens, cached = _usage(model.invoke(plan_messages("¿Cuánto vendimos en 2025?")))
    assert cached == input_tokens - 1  # the same prompt again: all but its last token


def test_a_tool_calling_step_reuses_the_whole_prompt_of_the_step_before(tools: list[StructuredTool]) -> None:
    model = OfflineSalesModel().bind_tools(tools)
    messages: list[BaseMessage] = [
        SystemMessage("Eres el asistente de ventas."),
        HumanMessage(
            "Fecha de hoy: 2026-11-30\n\nNueva pregunta:\n¿Cuánto compró nuestro mejor cliente en 2025?"
        ),
    ]
    first, second, *_ = run_turn(model, messages, tools)
    first_input, first_cached = _usage(first)
    second_input, second_cached = _usage(second)
    assert first_cached == 0
    assert second_cached == first_input < second_input  # tools, system, question: the first step's prompt


def test_a_different_system_prompt_shares_nothing(tools: list[StructuredTool]) -> None:
    model = OfflineSalesModel()
    model.invoke([SystemMessage("Instrucciones A"), HumanMessage("Hola")])
    assert _usage(model.invoke([SystemMessage("Instrucciones B"), HumanMessage("Hola")]))[1] == 0


def test_tools_come_first_so_other_tools_share_nothing(tools: list[StructuredTool]) -> None:
    model = OfflineSalesModel()
    messages = [SystemMessage("Eres el asistente."), HumanMessage("Hola")]
    model.bind_tools(tools).invoke(messages)
    assert _usage(model.bind_tools(tools[:2]).invoke(messages))[1] == 0


def test_tool_call_ids_are_not_part_of_the_prompt() -> None:
    """Many chat templates do not render ids; replayed history with other ids still matches."""

    def history(call_id: str) -> list[BaseMessage]:
        call = {"name": "ventas_anuales", "args": {"anio": 2025}, "id": call_id, "type": "tool_call"}
        return [
            SystemMessage("Eres el asistente."),
            HumanMessage("¿Cuánto vendimos en 2025?"),
            AIMessage("", tool_calls=[call]),
            ToolMessage('{"total": 1}', tool_call_id=call_id),
        ]

    model = OfflineSalesModel()
    model.invoke(history("call_0_0"))
    input_tokens, cached = _usage(model.invoke([*history("call_9_9"), HumanMessage("Gracias")]))
    assert cached == sum(block.tokens for block in prompt_blocks(history("x"), {}))
    assert cached < input_tokens


@pytest.mark.parametrize("with_tools", [False, True])
def test_the_blocks_add_up_to_the_input_tokens(tools: list[StructuredTool], with_tools: bool) -> None:
    model = OfflineSalesModel(prompt_cache_size=0)
    messages = plan_messages("¿Cuánto vendimos en 2025?", state={"anio": 2025})
    options: dict[str, Any] = {}
    if with_tools:
        bound = model.bind_tools(tools)
        options = dict(bound.kwargs)  # type: ignore[attr-defined]
        reply = bound.invoke(messages)
    else:
        reply = model.invoke(messages)
    assert sum(block.tokens for block in prompt_blocks(messages, options)) == _usage(reply)[0]


def test_the_least_recently_used_prompt_leaves_a_full_cache_and_each_instance_has_its_own() -> None:
    model = OfflineSalesModel(prompt_cache_size=1)
    a = [SystemMessage("Instrucciones A"), HumanMessage("Hola")]
    model.invoke(a)
    model.invoke([SystemMessage("Instrucciones B"), HumanMessage("Hola")])  # pushes a out
    assert _usage(model.invoke(a))[1] == 0
    assert _usage(OfflineSalesModel().invoke(a))[1] == 0


def test_a_streamed_call_reports_what_an_invoked_call_reports() -> None:
    invoked, streamed = OfflineSalesModel(), OfflineSalesModel()
    for model in (invoked, streamed):
        model.invoke(plan_messages("¿Cuánto vendimos en 2025?"))
    whole = invoked.invoke(plan_messages("¿Y en 2024?"))
    assert merged(streamed.stream(plan_messages("¿Y en 2024?"))).usage_metadata == whole.usage_metadata
    assert _usage(whole)[1] == _system_tokens()


def test_cached_tokens_skip_prefill_in_the_simulated_latency() -> None:
    gpu = LATENCY_PROFILES["gpu-8b"]
    model = OfflineSalesModel(latency_profile=gpu)
    cold = model.invoke(plan_messages("¿Cuánto vendimos en 2025?"))
    warm = model.invoke(plan_messages("¿Cuánto vendimos en 2024?"))
    input_tokens, cached = _usage(warm)
    output_tokens = warm.usage_metadata["output_tokens"]  # type: ignore[index]
    assert warm.response_metadata["simulated_latency_ms"] == gpu.latency_ms(
        input_tokens, output_tokens, cached
    )
    assert warm.response_metadata["simulated_first_token_ms"] == gpu.first_token_ms(input_tokens, cached)
    assert _usage(cold) == (input_tokens, 0)  # the same prompt length, nothing cached
    saved_ms = cached / 3000 * 1000  # gpu-8b prefills 3,000 tokens a second
    cold_first, warm_first = (r.response_metadata["simulated_first_token_ms"] for r in (cold, warm))
    assert cold_first - warm_first == pytest.approx(saved_ms, abs=0.01)


def test_prefix_cache_rule_on_blocks() -> None:
    cache = PrefixCache(size=4)
    a, b, c, d = (PromptBlock(key, tokens) for key, tokens in (("a", 100), ("b", 20), ("c", 7), ("d", 5)))
    assert cache.read([a, b, c]) == 0
    assert cache.read([a, b, d]) == 120
    assert cache.read([a, b, c, d]) == 127
    assert cache.read([b, a]) == 0  # a prefix, not any shared block
    assert cache.read([a]) == 99  # the whole prompt matches: all but its last token
    assert cache.read([]) == 0


def test_a_negative_cache_size_is_refused() -> None:
    with pytest.raises(ValueError, match="0 or more"):
        PrefixCache(size=-1)
    with pytest.raises(ValueError):
        OfflineSalesModel(prompt_cache_size=-1)


_PLAN_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "Plan",
        "schema": {
            "type": "object",
            "properties": {"operaciones": {"type": "array", "items": {"type": "object"}}},
            "required": ["operaciones"],
        },
    },
}


def test_a_response_format_schema_is_prompt_for_hosted_apis_and_grammar_for_local_servers() -> None:
    """Without a profile (and under gemini-flash) the schema is a prompt block, as hosted APIs bill it; the
    local presets (llama.cpp, Ollama) compile it into a grammar, so it adds no input token."""
    messages = plan_messages("¿Cuánto vendimos en 2025?")
    schema_tokens = sum(b.tokens for b in prompt_blocks([], {"response_format": _PLAN_FORMAT}))
    assert schema_tokens > 0

    def input_tokens(profile: str | None) -> int:
        model = OfflineSalesModel(latency_profile=profile, prompt_cache_size=0)
        return _usage(model.invoke(messages, response_format=_PLAN_FORMAT))[0]

    hosted = input_tokens(None)
    assert input_tokens("gemini-flash") == hosted
    assert input_tokens("gpu-8b") == input_tokens("cpu-8b") == hosted - schema_tokens
    assert (
        LATENCY_PROFILES["gpu-8b"].schema_as_grammar
        and not LATENCY_PROFILES["gemini-flash"].schema_as_grammar
    )
