"""The findings lead with structure, state accuracy differences only when established, and say plainly whether
a target was met (benchmarks/report/findings.py)."""

from __future__ import annotations

from typing import Any

from benchmarks.report.aggregate import summarize
from benchmarks.report.findings import accuracy_statement, findings, headline, target_sentences
from benchmarks.report.summary import ModeSummary, PairedComparison, Summary
from benchmarks.results import TurnRow
from benchmarks.stats import Interval
from tests.benchmarks.report.sample_results import turn_row


def _row(mode: str, scenario: str, passed: bool, **kw: Any) -> TurnRow:
    return turn_row(mode, passed=passed, scenario=scenario, **{"model_calls": 2, "input_tokens": 1000, **kw})


def _rows(tools_fail_every: int | None) -> list[TurnRow]:
    rows = []
    for i in range(30):
        rows.append(_row("planner", f"s{i}", True, output_tokens=160, harness_ms=3.3))
        fails = tools_fail_every is not None and i % tools_fail_every == 0
        rows.append(
            _row("toolcalling", f"s{i}", not fails, model_calls=3, input_tokens=1200, output_tokens=60)
        )
    return rows


def test_the_headline_leads_with_calls_and_tokens() -> None:
    top = headline(summarize(_rows(None), ["planner", "toolcalling"]))
    assert top is not None
    assert top.startswith(
        "Per turn: planner 2.00 model calls, 1000 input / 160 output tokens; "
        "toolcalling 3.00 calls, 1200 / 60 tokens."
    )
    assert "passed the same turns (100%)" in top


def test_an_accuracy_gap_the_run_cannot_establish_is_not_stated_as_one() -> None:
    rows = _rows(None)
    rows[1] = _row("toolcalling", "s0", False, model_calls=3, input_tokens=1200)  # one turn apart
    summary = summarize(rows, ["planner", "toolcalling"])
    top = headline(summary) or ""
    assert "planner 100% vs toolcalling 97%, not a difference this run can establish" in top
    assert "more accurate" not in top
    text = " ".join(findings(summary))
    assert "no accuracy difference between planner and toolcalling this run can establish" in text
    assert "McNemar p = 1.00" in text and "95% interval 0 to" in text


def test_an_established_accuracy_difference_is_stated_with_its_interval() -> None:
    summary = summarize(_rows(3), ["planner", "toolcalling"])  # toolcalling fails 10 of 30
    top = headline(summary) or ""
    assert "Accuracy: planner is more accurate than toolcalling by 33.3 points (95% interval" in top
    text = " ".join(findings(summary))
    assert "planner is more accurate than toolcalling by 33.3 points (100.0% vs 66.7%" in text
    assert "McNemar p = 0.002" in text


def test_the_statement_needs_both_the_interval_and_mcnemar() -> None:
    comparison = PairedComparison(
        base="planner",
        other="toolcalling",
        pairs=60,
        both=55,
        base_only=5,
        other_only=0,
        neither=0,
        base_accuracy=1.0,
        other_accuracy=55 / 60,
        difference=5 / 60,
        interval=Interval(low=0.02, high=0.15),  # excludes 0 …
        p_value=0.0625,  # … but McNemar does not reject: b=5, c=0
    )
    assert not comparison.established
    assert accuracy_statement(comparison).startswith("no accuracy difference between planner and toolcalling")


def _mode(name: str, **figures: Any) -> ModeSummary:
    values: dict[str, Any] = dict(
        turns=10, passed=10, failed_turns=0, accuracy=1.0, calls_mean=2.0, calls_max=2,
        input_tokens_mean=1000.0, output_tokens_mean=100.0, latency_p50=5.0, latency_p95=9.0, harness_p50=1.0,
        harness_p95=2.0,
    )  # fmt: skip
    return ModeSummary(mode=name, **{**values, **figures})


def _summary(*modes: ModeSummary, **values: Any) -> Summary:
    return Summary(modes=list(modes), categories=[], **values)


def test_targets_say_plainly_whether_they_were_met() -> None:
    missed = _summary(_mode("planner", harness_p50=3.3), _mode("toolcalling"))
    assert target_sentences(missed) == [
        "Target planner harness p50 under 2 ms: target not met (3.3 ms vs 2 ms)."
    ]
    met = _summary(_mode("planner", harness_p50=1.8))
    assert target_sentences(met)[0].endswith("target met (1.8 ms vs 2 ms).")
    text = " ".join(findings(missed, targets=True))
    assert "target not met (3.3 ms vs 2 ms)" in text
    assert "a little above" not in text


def test_a_report_names_no_target_its_reader_did_not_set() -> None:
    # the project's own targets belong to the result blocks of its documentation, which explain them
    missed = _summary(_mode("planner", harness_p50=3.3), _mode("toolcalling"))
    assert not any(sentence.startswith("Target ") for sentence in findings(missed))


def test_latency_targets_between_modes_need_both_figures() -> None:
    profiled = _summary(
        _mode("planner", simulated_p50=2431.7, simulated_first_answer_p50=900.0),
        _mode("toolcalling", simulated_p50=1122.7, simulated_first_answer_p50=1000.0),
        prompt_cache=True,
    )
    sentences = target_sentences(profiled)
    assert (
        "Target planner simulated p50 at most toolcalling's: "
        "target not met (2,432 ms vs 1,123 ms), "
        "measured with the offline model's prefix cache modelled (--prompt-cache)." in sentences
    )
    assert any("time to first answer" in s and "target met (900 ms vs 1,000 ms)" in s for s in sentences)
    assert all(
        "simulated p50" not in s for s in target_sentences(_summary(_mode("planner", simulated_p50=2.0)))
    )


def test_latency_targets_say_under_which_prefix_cache_setting_they_were_measured() -> None:
    modes = [
        _mode("planner", harness_p50=1.0, simulated_p50=900.0),
        _mode("toolcalling", simulated_p50=1000.0),
    ]
    by_setting = {
        setting: target_sentences(_summary(*modes, prompt_cache=setting)) for setting in (True, False, None)
    }
    assert by_setting[False][1].endswith(
        "target met (900 ms vs 1,000 ms), measured without a modelled prefix cache (--no-prompt-cache)."
    )
    assert by_setting[True][1].endswith("prefix cache modelled (--prompt-cache).")
    assert by_setting[None][1].endswith("prefix-cache setting not recorded.")
    assert all(s[0].endswith("target met (1 ms vs 2 ms).") for s in by_setting.values()), "harness: no clause"


def test_cached_share_and_first_answer_join_the_structure_when_present() -> None:
    summary = _summary(
        _mode("planner", cached_share=0.62, simulated_first_answer_p50=850.0),
        _mode("toolcalling", cached_share=0.4, first_answer_p50=12.0),
    )
    top = headline(summary) or ""
    assert (
        "planner 2.00 model calls, 1000 input / 100 output tokens, 62% of input cached, "
        "first answer token after 850 ms (simulated p50)" in top
    )
    assert (
        "toolcalling 2.00 calls, 1000 / 100 tokens, 40% of input cached, first answer token after 12 ms "
        "(measured p50)" in top
    )
    text = " ".join(findings(summary))
    assert "prompt cache: planner 62%, toolcalling 40%" in text


def test_warm_up_turns_are_mentioned() -> None:
    rows = [*_rows(None), _row("planner", "s0", False, warmup=True)]
    assert any("1 warm-up turn(s)" in s for s in findings(summarize(rows)))
