"""A provider that reports no token usage gives "not reported" figures, never 0 tokens or 0 cost."""

from __future__ import annotations

from benchmarks.report.aggregate import NOT_REPORTED, summarize_mode, tokens_text
from benchmarks.report.findings import measurement_sentences
from benchmarks.results import TurnRow
from benchmarks.scoring import TurnScore


def row(turn: int, *, reported: bool, tokens: int = 0, recovered: int = 0) -> TurnRow:
    return TurnRow(
        mode="toolcalling",
        scenario="s",
        category="c",
        turn=turn,
        repetition=1,
        user="¿Cuánto vendimos?",
        model_calls=1,
        input_tokens=tokens,
        output_tokens=tokens // 10,
        usage_reported=reported,
        recovered_tool_calls=recovered,
        score=TurnScore(passed=True),
    )


def test_no_reported_usage_prints_not_reported() -> None:
    mode = summarize_mode("toolcalling", [row(1, reported=False), row(2, reported=False)])

    assert not mode.tokens_reported
    assert tokens_text(mode, mode.input_tokens_mean) == NOT_REPORTED
    assert any(
        "did not report token usage" in s and "toolcalling 2" in s for s in measurement_sentences([mode])
    )


def test_token_means_cover_only_the_turns_that_reported_usage() -> None:
    mode = summarize_mode("toolcalling", [row(1, reported=True, tokens=1000), row(2, reported=False)])

    assert mode.tokens_reported and mode.usage_unreported == 1
    assert tokens_text(mode, mode.input_tokens_mean) == "1000"


def test_recovered_tool_calls_are_summed_and_said() -> None:
    mode = summarize_mode(
        "toolcalling", [row(1, reported=True, recovered=2), row(2, reported=True, recovered=1)]
    )

    assert mode.recovered_tool_calls == 3
    assert "Tool calls written as text and recovered into real tool calls: toolcalling 3." in (
        measurement_sentences([mode])
    )
