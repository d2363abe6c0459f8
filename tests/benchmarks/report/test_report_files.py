"""report.html and report.md render every chart, table and statement (benchmarks/report/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.report import OFFLINE_NOTICE, findings, summarize, write_reports
from benchmarks.results import OperationRecord, ResultsWriter, RunMeta, TurnRow, read_results
from benchmarks.scoring.turn import TurnScore

MODES = ["planner", "toolcalling", "toolcalling-full"]


def rows() -> list[TurnRow]:
    out: list[TurnRow] = []
    for mode in MODES:
        calls = 2 if mode == "planner" else 3
        for turn in range(1, 13):
            growth = 1 if mode != "toolcalling-full" else turn
            failed = mode == "toolcalling" and turn == 3
            out.append(
                TurnRow(
                    mode=mode,
                    scenario="conversacion-larga",
                    category="long_conversation",
                    turn=turn,
                    repetition=1,
                    user=f"¿Cuánto vendimos en {2000 + turn}? <b>",
                    answer="" if failed else f"Vendimos ₲{turn}.000.000 <script>",
                    model_calls=calls,
                    input_tokens=1000 * growth,
                    output_tokens=50,
                    model_ms=1.0,
                    harness_ms=0.8,
                    plan={"operaciones": [{"funcion": "ventas_anuales"}]} if mode == "planner" else None,
                    operations=[OperationRecord(funcion="ventas_anuales", parametros={"anio": 2000 + turn})],
                    failed=failed,
                    errors=["ProviderError: boom"] if failed else [],
                    score=TurnScore(passed=not failed, details=["the turn failed"] if failed else []),
                )
            )
    return out


@pytest.fixture
def results_path(tmp_path: Path) -> Path:
    writer = ResultsWriter(tmp_path / "results.jsonl")
    writer.write(RunMeta(provider="offline", modes=MODES, scenarios=1, turns=12))
    for record in rows():
        writer.write(record)
    return writer.path


def test_report_html_is_self_contained_and_holds_every_chart_and_table(results_path: Path) -> None:
    files = write_reports(results_path)
    html = files.html.read_text(encoding="utf-8")
    assert files.html.parent == results_path.parent
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script|<link|https?://(?!www\.w3\.org/2000/svg)", html), "no script, no CDN"
    for chart in ("chart-calls", "chart-input-tokens", "chart-latency", "chart-accuracy", "chart-growth"):
        assert f'id="{chart}"' in html
    assert html.count("<svg") >= 5
    assert 'class="chart line-chart"' in html
    assert all(f'data-series="{mode}"' in html for mode in MODES), "one line per mode"
    for table in ("summary", "categories", "pass-k", "turns"):
        assert f'<table class="{table}"' in html
    failing_cell = html.split('class="answer fail"')[1].split("</td>")[0]
    assert "the turn failed" in failing_cell
    assert "<details><summary>plan" in html and "<details><summary>tool calls" in html
    assert 'id="findings"' in html and "calls/turn" in html
    assert 'id="offline-notice"' in html and "deterministic stand-in" in html


def test_user_and_model_text_is_escaped(results_path: Path) -> None:
    html = write_reports(results_path).html.read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "&lt;b&gt;" in html


def test_the_offline_notice_is_absent_for_real_providers(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path / "results.jsonl")
    writer.write(RunMeta(provider="ollama", model="llama3.1:8b", modes=MODES))
    for record in rows():
        writer.write(record)
    files = write_reports(writer.path)
    assert 'id="offline-notice"' not in files.html.read_text(encoding="utf-8")
    assert OFFLINE_NOTICE not in files.markdown.read_text(encoding="utf-8")


def test_report_md_has_the_summary_categories_pass_k_growth_and_failures(results_path: Path) -> None:
    text = write_reports(results_path).markdown.read_text(encoding="utf-8")
    for heading in (
        "## Findings",
        "## Summary",
        "## Accuracy per category",
        "## pass^k",
        "## Context growth",
    ):
        assert heading in text
    assert "| planner |" in text and "×12.00" in text
    assert "deterministic stand-in" in text
    assert "| toolcalling | conversacion-larga | 3 | 1 |" in text


def test_findings_are_computed_from_the_data(results_path: Path) -> None:
    results = read_results(results_path)
    sentences = findings(summarize(results.rows, results.meta.modes), results.meta)
    text = " ".join(sentences)
    assert "planner: 2.0 calls/turn vs 3.0 for toolcalling" in text
    # planner 1000 tokens/turn vs toolcalling-full mean 6500: 85% fewer.
    assert "85% fewer input tokens" in text
    assert "planner never exceeded 2 model calls per turn" in text
    assert "toolcalling-full ×12.00" in text
    assert "1 turn(s) raised" in text


def test_the_report_can_be_re_rendered_elsewhere(results_path: Path, tmp_path: Path) -> None:
    files = write_reports(results_path, tmp_path / "again")
    assert files.html.exists() and files.markdown.exists()
    assert files.summary.mode("planner") is not None


def test_an_interrupted_results_file_still_reads(results_path: Path) -> None:
    with results_path.open("a", encoding="utf-8") as handle:
        handle.write('{"kind": "turn", "mode": "plan')
    assert len(read_results(results_path).rows) == 36
