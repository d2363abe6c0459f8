"""The documented token approximation."""

from __future__ import annotations

from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.llm.tokens import MESSAGE_OVERHEAD_TOKENS, approx_json_tokens, approx_tokens


def test_approx_tokens_is_ceil_of_a_quarter_of_the_characters() -> None:
    assert [approx_tokens("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    assert approx_tokens("₲850.000.000") == 3


def test_json_is_counted_compactly() -> None:
    assert approx_json_tokens({"anio": 2025}) == approx_tokens('{"anio":2025}')


def test_model_usage_metadata_uses_the_approximation() -> None:
    reply = OfflineSalesModel().invoke("hola")
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] == approx_tokens("hola") + MESSAGE_OVERHEAD_TOKENS
    assert usage["output_tokens"] == approx_tokens(str(reply.content))
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert reply.response_metadata["model_name"] == "offline-sales"


def test_bound_tools_count_as_input(tools: list) -> None:  # type: ignore[type-arg]
    plain = OfflineSalesModel().invoke("hola").usage_metadata
    with_tools = OfflineSalesModel().bind_tools(tools).invoke("hola").usage_metadata
    assert plain is not None and with_tools is not None
    assert with_tools["input_tokens"] > plain["input_tokens"] + 50
