"""Token usage is counted over streams for every network provider the factory builds, over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.language_models import BaseChatModel

from benchmarks.stand_ins.emulators import EmulatorKind, EmulatorServer, create_emulator
from shared.llm.factory import build_chat_model
from shared.llm.usage import UsageTracker

QUESTION = "¿Cuánto vendimos en 2025?"


@pytest.fixture(scope="module", params=["ollama", "gemini", "openai"])
def provider_model(request: pytest.FixtureRequest) -> Iterator[tuple[str, BaseChatModel, EmulatorServer]]:
    kind: EmulatorKind = request.param
    with create_emulator(kind) as server:
        if kind == "openai":
            model = build_chat_model("openai", api_key="k", base_url=f"{server.base_url}/v1")
        elif kind == "gemini":
            model = build_chat_model("gemini", api_key="k", base_url=server.base_url)
        else:
            model = build_chat_model("ollama", base_url=server.base_url)
        yield kind, model, server


def test_a_streamed_call_counts_input_and_output_tokens(
    provider_model: tuple[str, BaseChatModel, EmulatorServer],
) -> None:
    _, model, _ = provider_model
    tracker = UsageTracker()
    text = "".join(str(chunk.content) for chunk in model.stream(QUESTION, config={"callbacks": [tracker]}))

    assert text
    assert tracker.calls == 1
    assert tracker.input_tokens > 0 and tracker.output_tokens > 0
    assert tracker.unreported_calls == 0


def test_the_openai_provider_asks_a_compatible_server_for_usage_in_streams() -> None:
    with create_emulator("openai") as server:
        list(build_chat_model("openai", api_key="k", base_url=f"{server.base_url}/v1").stream(QUESTION))
    body = [r.body for r in server.requests if r.path.endswith("/chat/completions")][-1]
    assert body["stream_options"] == {"include_usage": True}


def test_a_stream_without_usage_is_counted_as_unreported_not_as_zero_tokens() -> None:
    from langchain_openai import ChatOpenAI

    with create_emulator("openai") as server:
        model = ChatOpenAI(model="m", api_key="k", base_url=f"{server.base_url}/v1", max_retries=0)  # type: ignore[arg-type]
        tracker = UsageTracker()
        list(model.stream(QUESTION, config={"callbacks": [tracker]}))

    body = [r.body for r in server.requests if r.path.endswith("/chat/completions")][-1]
    assert "stream_options" not in body  # ChatOpenAI's default with a base_url: the server sends no usage
    assert (tracker.calls, tracker.input_tokens, tracker.unreported_calls) == (1, 0, 1)
