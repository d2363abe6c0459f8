"""The verdict that opens every report: what the run measures (benchmarks/report/runs.py), the verdict
table (verdict_table.py) and sentences that never claim more than the paired tests show (verdict.py)."""

from __future__ import annotations

from typing import Any

from benchmarks.report import summarize_run
from benchmarks.report.runs import first_line, regime_of, title
from benchmarks.report.verdict import model_calls, paired_figure, verdict_of
from benchmarks.report.verdict_table import NOT_MEASURED, SIMULATED_MARK, verdict_lines, verdict_table
from benchmarks.results import RunMeta, RunResults, TurnRow
from tests.benchmarks.report.sample_results import turn_row

REAL = RunMeta(provider="openai", model="qwen2.5-coder-1.5b-instruct", modes=["planner", "toolcalling"])
OFFLINE = RunMeta(provider="offline", modes=["planner", "toolcalling"], prompt_cache=True)


def _turns(planner_passes: int, toolcalling_passes: int, turns: int = 40, **values: Any) -> list[TurnRow]:
    """``turns`` paired turns; the planner passes its first ``planner_passes``, tool calling its first
    ``toolcalling_passes``. Tool calling makes 3 calls and sends 2,000 tokens to the planner's 2 and 1,000,
    and answers first after 100 ms to the planner's 300 ms."""
    shapes = {
        "planner": (planner_passes, 2, 1000, 300.0),
        "toolcalling": (toolcalling_passes, 3, 2000, 100.0),
    }
    rows = []
    for turn in range(1, turns + 1):
        for mode, (passes, calls, tokens, first) in shapes.items():
            figures = {"model_calls": calls, "input_tokens": tokens, "first_answer_ms": first, **values}
            rows.append(
                turn_row(
                    mode,
                    passed=turn <= passes,
                    why="answer lacks the total",
                    scenario=f"s{turn}",
                    output_tokens=50,
                    model_ms=400.0,
                    **figures,
                )
            )
    return rows


def _verdict(meta: RunMeta, rows: list[TurnRow]) -> Any:
    run = RunResults(meta=meta, rows=rows)
    return verdict_of(summarize_run(run), rows, regime_of(meta), meta.model)


def test_an_offline_run_says_first_that_it_measures_structure_not_accuracy() -> None:
    assert first_line(OFFLINE).startswith("Structure run:")
    assert "not accuracy" in first_line(OFFLINE) and "simulated" not in first_line(OFFLINE)
    assert "not accuracy" in title(OFFLINE)
    simulated = OFFLINE.model_copy(update={"latency_profile": "gpu-8b"})
    assert "model time is simulated under the gpu-8b latency profile" in first_line(simulated)
    assert "model time simulated (gpu-8b)" in title(simulated)
    assert first_line(REAL).startswith("Real-model run:") and "qwen2.5-coder-1.5b-instruct" in first_line(
        REAL
    )


def test_a_structure_run_shows_no_accuracy_and_a_simulated_run_marks_its_times() -> None:
    meta = OFFLINE.model_copy(update={"latency_profile": "gpu-8b"})
    rows = [r.model_copy(update={"simulated_model_ms": 500.0}) for r in _turns(40, 40)]
    run = RunResults(meta=meta, rows=rows)
    header, table = verdict_table(verdict_lines("", summarize_run(run), regime_of(meta)))
    planner = dict(zip(header, table[0], strict=True))
    assert planner["accuracy (95% CI)"] == NOT_MEASURED
    assert planner["latency p50 / p95 ms"].endswith(SIMULATED_MARK)
    assert planner["calls/turn (max)"] == "2.00 (2)" and planner["tokens in / out per turn"] == "1,000 / 50"
    real = RunResults(meta=REAL, rows=_turns(30, 10))
    header, table = verdict_table(verdict_lines("", summarize_run(real), regime_of(REAL)))
    planner = dict(zip(header, table[0], strict=True))
    assert planner["accuracy (95% CI)"].startswith("75.0% (")
    assert SIMULATED_MARK not in planner["latency p50 / p95 ms"]
    assert planner["first answer p50 / p95 ms"] == "300 / 300"


def test_a_significant_accuracy_difference_names_the_better_mode_and_its_trade_offs() -> None:
    verdict = _verdict(REAL, _turns(30, 10))
    [lead] = verdict.leads
    assert "planner is the better choice on this run's evidence, significantly more accurate" in lead
    assert (
        "it is also ahead on fewer model calls (2.00 vs 3.00 per turn) and fewer input tokens "
        "(1,000 vs 2,000 per turn)" in lead
    )
    assert "toolcalling is ahead on first answer sooner (100 vs 300 ms p50)" in lead
    assert any(
        d.startswith("Accuracy on 40 paired turns") and d.endswith("significant.") for d in verdict.details
    )


def test_an_accuracy_difference_the_test_does_not_establish_is_said_to_be_not_significant() -> None:
    verdict = _verdict(REAL, _turns(22, 19))
    [lead] = verdict.leads
    assert "no significant accuracy difference (55.0% vs 47.5%" in lead
    assert "so accuracy cannot decide" in lead and "better choice" not in lead
    assert any(d.endswith(": not significant.") for d in verdict.details)


def test_a_structure_run_never_makes_an_accuracy_statement() -> None:
    verdict = _verdict(OFFLINE, _turns(40, 5))
    text = " ".join(verdict.leads + verdict.details)
    assert "accurate" not in text and "Accuracy on" not in text
    assert "structure only (accuracy not measured)" in verdict.leads[0]
    assert "planner is ahead on fewer model calls (2.00 vs 3.00 per turn)" in verdict.leads[0]


def test_a_figure_whose_turns_split_by_chance_is_no_reason() -> None:
    rows = _turns(40, 40, turns=6)
    for row in rows:  # tool calling makes fewer calls on 2 turns, more on 4: not significant
        if row.mode == "toolcalling":
            row.model_calls = 1 if int(row.scenario[1:]) <= 2 else 3
    figure = paired_figure(rows, "planner", "toolcalling", model_calls)
    assert figure is not None and (figure.base_lower, figure.other_lower, figure.pairs) == (4, 2, 6)
    assert figure.lower is None and figure.p_value > 0.05
    verdict = _verdict(REAL, rows)
    assert "fewer model calls" not in verdict.leads[0]
    assert any(
        d.startswith("Model calls per turn") and "not a significant difference" in d for d in verdict.details
    )


def test_failed_turns_and_the_planner_call_bound_are_stated() -> None:
    rows = _turns(40, 38)
    rows[-1] = rows[-1].model_copy(update={"failed": True, "failure": "model_output"})
    text = _verdict(REAL, rows).details
    assert "planner never exceeded its two model calls per turn (max 2)." in text
    assert text[-1] == "Failed turns (each scored as not passed): toolcalling 1 of 40 (1 model_output)."
