"""report.html and report.md render every chart, table and statement (benchmarks/report/)."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.report import OFFLINE_NOTICE, findings, summarize, write_reports
from benchmarks.results import RunMeta, read_results
from benchmarks.scoring.turn import TurnScore
from benchmarks.transcripts import TRANSCRIPTS_FILE, CallTranscript, Said
from tests.benchmarks.report.sample_results import MODES, rows, write_results

SAMPLE_META = RunMeta(provider="offline", modes=MODES, scenarios=1, turns=12)
REAL_META = RunMeta(provider="ollama", model="llama3.1:8b", modes=MODES, scenarios=1, turns=12)
"""A real model's run: its accuracy is a result (a stand-in's is not, and its reports show none)."""


def test_report_html_is_self_contained_and_holds_every_chart_and_table(results_path: Path) -> None:
    files = write_reports(results_path)
    html = files.html.read_text(encoding="utf-8")
    assert files.html.parent == results_path.parent
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script|<link|https?://(?!www\.w3\.org/(2000/svg|1999/xlink)\")", html), (
        "no script, no CDN"
    )
    for chart in ("chart-latency-distribution", "chart-growth"):
        assert f'id="{chart}"' in html
    assert 'class="chart line-chart"' in html
    assert all(f'id="chart-growth-series-{mode}"' in html for mode in MODES), "one line per mode"
    for table in ("summary", "categories", "turns"):
        assert f'<table class="{table}"' in html
    failing_cell = html.split('class="answer fail"')[1].split("</td>")[0]
    assert "the turn failed" in failing_cell
    assert "<details><summary>plan" in html and "<details><summary>tool calls" in html
    assert 'id="findings"' in html and "calls/turn" in html
    assert 'id="offline-notice"' in html and "deterministic stand-in" in html
    again = write_reports(results_path, results_path.parent / "again")  # rendered elsewhere, from the file
    assert again.html.exists() and again.markdown.exists() and again.summary.mode("planner") is not None


def test_a_stand_in_runs_page_shows_no_accuracy_only_whether_the_pipeline_did_what_it_should(
    results_path: Path, tmp_path: Path
) -> None:
    stand_in = write_reports(results_path).html.read_text(encoding="utf-8")
    real_path = write_results(tmp_path / "real" / "results.jsonl", REAL_META, rows())
    real = write_reports(real_path).html.read_text(encoding="utf-8")

    accuracy_shown = (
        'id="chart-tradeoff"',  # accuracy against latency and cost
        '<table class="pass-k"',
        '<table class="paired"',
        "% of turns passed",
    )
    assert [shown for shown in accuracy_shown if shown in stand_in] == []
    assert [shown for shown in accuracy_shown if shown not in real] == []

    def summary_table(page: str) -> str:
        return page.split('<table class="summary"')[1].split("</table>")[0]

    assert "accuracy" not in summary_table(stand_in) and "accuracy" in summary_table(real)
    assert "not measured (stand-in)" in stand_in  # the verdict table says why it has no figure
    assert not re.search(r"\d%", stand_in.split('<table class="categories"')[1].split("</table>")[0])
    assert re.search(r"\d%", real.split('<table class="categories"')[1].split("</table>")[0])
    assert "Pipeline check: 35 of 36 turns as the stand-in should." in stand_in


def test_user_and_model_text_is_escaped(results_path: Path) -> None:
    html = write_reports(results_path).html.read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "&lt;b&gt;" in html


def test_the_offline_notice_is_absent_for_real_providers(tmp_path: Path) -> None:
    path = write_results(
        tmp_path / "results.jsonl", RunMeta(provider="ollama", model="llama3.1:8b", modes=MODES), rows()
    )
    files = write_reports(path)
    assert 'id="offline-notice"' not in files.html.read_text(encoding="utf-8")
    assert OFFLINE_NOTICE not in files.markdown.read_text(encoding="utf-8")


def test_report_md_has_the_summary_categories_pass_k_growth_and_failures(tmp_path: Path) -> None:
    text = write_reports(write_results(tmp_path / "results.jsonl", REAL_META, rows())).markdown.read_text(
        encoding="utf-8"
    )
    for heading in (
        "## Results per category",
        "## Failures",
        "## Summary",
        "## pass^k",
        "## Context growth",
    ):
        assert heading in text
    assert "| provider | 0 | 1 | 0 |" in text  # failed turns per kind, one column per mode
    assert "| planner |" in text and "×12.00" in text
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
    assert "toolcalling: 1 turn(s) ended in a failure (1 provider)" in text


def test_every_chart_is_a_labelled_image_with_both_axes_titled(results_path: Path) -> None:
    html = write_reports(results_path).html.read_text(encoding="utf-8")
    charts = re.findall(r"<svg .*?</svg>", html, flags=re.S)
    assert len(charts) == 2, "the latency distribution and the growth curve (no first answer recorded)"
    for chart, (title, x_label, y_label) in zip(
        charts,
        [
            ("Latency per turn, measured", "time per turn, measured", "mode"),
            ("Input tokens per turn · conversacion-larga", "turn", "input tokens per turn"),
        ],
        strict=True,
    ):
        assert 'role="img"' in chart and f'aria-label="{title}"' in chart, title
        assert f">{x_label}" in chart and f">{y_label}<" in chart, title


def test_each_mode_keeps_one_colour_across_tables_and_charts(results_path: Path) -> None:
    html = write_reports(results_path).html.read_text(encoding="utf-8")
    seen: dict[str, set[str]] = {mode: set() for mode in MODES}
    for colour, mode in re.findall(r'class="swatch" style="background:(#[0-9a-f]{6})"></span>([\w-]+)', html):
        seen[mode].add(colour)
    for chart in ("chart-latency-distribution", "chart-growth"):
        for mode in MODES:
            group = html.split(f'<g id="{chart}-series-{mode}">')[1].split("</g>")[0]
            seen[mode] |= set(re.findall(r"(?:fill|stroke): (#[0-9a-f]{6})", group))
    assert all(len(colours) == 1 for colours in seen.values()), seen
    assert len({next(iter(c)) for c in seen.values()}) == len(MODES), "modes have distinct colours"


def test_the_summary_leads_with_the_headline_and_the_offline_notice_stays_small(results_path: Path) -> None:
    html = write_reports(results_path).html.read_text(encoding="utf-8")
    summary = html.split('<section id="summary">')[1].split("</section>")[0]
    assert summary.index('id="headline"') < summary.index('id="findings"') < summary.index('class="summary"')
    # structure first (calls, tokens), then what accuracy shows
    assert "Per turn: planner 2.00 model calls, 1000 input / 50 output tokens; toolcalling 3.00 calls" in html
    assert summary.count("<li>") >= 4, "findings are a list, not one paragraph"
    notice = html.split('id="offline-notice"')[1].split("</p>")[0]
    assert "deterministic stand-in" in notice and 'id="offline-notice"' not in summary
    assert re.search(r"\.notice\{[^}]*font-size:\.8\d?rem", html), "visible but in small print"


def test_the_turn_table_links_failures_and_shows_compact_plans(results_path: Path) -> None:
    html = write_reports(results_path).html.read_text(encoding="utf-8")
    failing = html.split('id="failing-turns"')[1].split("</p>")[0]
    assert "1 of 12 turns" in failing and "conversacion-larga · 3 (toolcalling)" in failing
    target = re.search(r'href="#([^"]+)"', failing)
    assert target and f'<tr id="{target.group(1)}" class=' in html
    assert html.count('<tr class="scenario"') == 1, "one header row per scenario"
    assert "op1 · ventas_anuales({})" in html, "plans list one operation per line"
    assert "ventas_anuales({&#34;anio&#34;: 2003})" in html, "tool calls show their arguments"
    assert "3 calls · 1000 in / 50 out tokens" in html


def test_the_page_fits_its_width_and_prints(results_path: Path) -> None:
    html = write_reports(results_path).html.read_text(encoding="utf-8")
    assert "table.turns{width:100%;table-layout:fixed" in html and "overflow-wrap:anywhere" in html
    assert "svg.chart{display:block;max-width:100%;height:auto" in html, "charts shrink to their column"
    print_css = html.split("@media print{")[1]
    assert "break-inside:avoid" in print_css and "print-color-adjust:exact" in print_css


def test_a_mode_whose_every_turn_raised_is_not_compared(tmp_path: Path) -> None:
    broken = {"failed": True, "model_calls": 0, "input_tokens": 0, "score": TurnScore(passed=False)}
    records = [r.model_copy(update=broken) if r.mode == "planner" else r for r in rows()]
    path = write_results(tmp_path / "results.jsonl", SAMPLE_META, records)
    files = write_reports(path)
    text = " ".join(findings(files.summary))
    assert "fewer input tokens" not in text and "never exceeded" not in text
    assert "planner: every one of its 12 turns failed" in text
    assert "nothing to compare" in files.html.read_text(encoding="utf-8")


def test_report_md_reads_as_markdown(results_path: Path, tmp_path: Path) -> None:
    long_why = {"score": TurnScore(passed=False, details=["answer lacks a | b\nc " + "x " * 200])}
    records = [r.model_copy(update=long_why) if r.turn == 5 else r for r in rows()]
    path = write_results(tmp_path / "results.jsonl", SAMPLE_META, records)
    text = write_reports(path).markdown.read_text(encoding="utf-8")
    assert text.split("## Summary\n\n")[1].startswith("**Per turn: planner 2.00 model calls")
    assert "\n- planner never exceeded 2 model calls per turn" in text
    assert "|---|--:|--:|" in text, "figures are right-aligned"
    failing = text.split("## Failing turns")[1]
    assert "| all modes | conversacion-larga | 5 | 1 | answer lacks a \\| b c x x" in failing
    assert all(line.startswith("|") for line in failing.strip().splitlines()), "a cell never breaks a line"
    assert max(len(line) for line in failing.splitlines()) < 320 and "…" in failing


def test_reports_show_accuracy_intervals_the_paired_comparison_and_cost(tmp_path: Path) -> None:
    files = write_reports(write_results(tmp_path / "results.jsonl", REAL_META, rows()))
    text = files.markdown.read_text(encoding="utf-8")
    assert "| planner | 12 | 100.0% (75.8–100.0) |" in text, "Wilson interval of 12/12"
    assert "| toolcalling | 12 | 91.7% (64.6–98.5) |" in text
    paired = text.split("## Paired comparison")[1].split("##")[0]
    assert "| planner vs toolcalling | 12 | 11 | 1 | 0 | 0 | 100.0% / 91.7% | +8.3 |" in paired
    assert "no difference established" in paired and "McNemar" in paired
    assert "| long_conversation | 100% [76–100] (12) | 92% [65–99] (12) |" in text
    cost = text.split("## Cost per 1,000 turns")[1].split("##")[0]
    assert "| planner | 1000 | 0 | 50 | 0.00 |" in cost
    assert "local model" in cost and "gpt-4o-mini" in cost
    html = files.html.read_text(encoding="utf-8")
    for section in ('id="paired"', 'id="cost"', '<table class="paired"', '<table class="cost"'):
        assert section in html
    verdict = html.split('id="verdict-table"')[1].split("</table>")[0]
    assert '100.0%<span class="ci">75.8–100.0</span>' in verdict, "accuracy over its Wilson interval"
    assert 'id="intervals"' not in html and 'id="provenance"' not in html, "no repetitions, no provenance"


def test_a_hosted_model_is_priced_and_a_pricing_file_overrides_it(tmp_path: Path) -> None:
    path = write_results(
        tmp_path / "results.jsonl", RunMeta(provider="openai", model="gpt-4o-mini", modes=MODES), rows()
    )
    text = write_reports(path).markdown.read_text(encoding="utf-8")
    # planner: 1000 input, 50 output tokens per turn at 0.15 / 0.60 USD per million → 0.18 per 1,000 turns
    assert "| planner | 1000 | 0 | 50 | 0.18 |" in text
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  gpt-4o-mini: {input: 1, output: 2, source: ours, as_of: '2026'}\n")
    text = write_reports(path, pricing=prices).markdown.read_text(encoding="utf-8")
    assert "| planner | 1000 | 0 | 50 | 1.10 |" in text and "from ours, as of 2026" in text


def test_repetitions_add_bootstrap_intervals_and_warm_up_turns_stay_out(tmp_path: Path) -> None:
    warm = {"turn": 1, "repetition": 1, "warmup": True, "answer": "WARMUP"}
    records = [
        record
        for r in rows()
        for record in (
            r.model_copy(update=warm),
            r,
            r.model_copy(update={"repetition": 2, "model_ms": 1.0 + r.turn}),
        )
    ]
    meta = REAL_META.model_copy(update={"repeat": 2, "warmup": 1})
    path = write_results(tmp_path / "results.jsonl", meta, records)
    files = write_reports(path)
    text = files.markdown.read_text(encoding="utf-8")
    assert "## Intervals over 2 repetitions" in text
    assert "| planner | 24 | 100.0% (86.2–100.0) |" in text, "warm-up rows are not counted"
    assert "36 warm-up turn(s) were run first and left out of every figure" in text
    html = files.html.read_text(encoding="utf-8")
    assert 'id="intervals"' in html and "WARMUP" not in html


def test_the_provenance_is_shown_when_the_run_recorded_it(tmp_path: Path) -> None:
    from benchmarks.provenance import ModelIdentity, Provenance

    provenance = Provenance(
        git_commit="0123456789abcdef",
        git_dirty=True,
        packages={"langchain": "1.5.2"},
        prompt_hashes={"planner_mode/prompts/plan_system.md": "f" * 64},
        catalog_hash="c" * 64,
        tool_schema_hash="d" * 64,
        model=ModelIdentity(provider="ollama", model="qwen2.5:7b", digest="a" * 64),
        notes=["model identity from ollama: ConnectError"],
    )
    path = write_results(
        tmp_path / "results.jsonl",
        RunMeta(provider="ollama", model="qwen2.5:7b", modes=MODES, provenance=provenance),
        rows(),
    )
    files = write_reports(path)
    text = files.markdown.read_text(encoding="utf-8")
    section = text.split("## Provenance")[1].split("## Failing")[0]
    assert "| code | git 0123456789ab (dirty) |" in section
    assert "| prompt planner_mode/prompts/plan_system.md | ffffffffffff |" in section
    assert "digest aaaaaaaaaaaa" in section and "langchain 1.5.2" in section
    assert "| note | model identity from ollama: ConnectError |" in section
    assert '<table class="provenance">' in files.html.read_text(encoding="utf-8")


def test_the_first_line_says_what_the_figures_measure(results_path: Path, tmp_path: Path) -> None:
    files = write_reports(results_path)
    first = files.markdown.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# ") and "structure (calls, tokens, overhead), not accuracy" in first
    html = files.html.read_text(encoding="utf-8")
    header = html.split("<header>")[1]
    assert header.index("<h1>") < header.index('class="regime structure"') < header.index('class="meta"')
    assert html.index('id="verdict"') < html.index('id="summary"'), "the verdict comes first"
    real = write_results(
        tmp_path / "real.jsonl", RunMeta(provider="ollama", model="qwen2.5:7b", modes=MODES), rows()
    )
    text = write_reports(real, tmp_path / "real").markdown.read_text(encoding="utf-8").splitlines()
    assert text[0] == "# erp-ai-harness benchmark: which architecture for qwen2.5:7b"
    assert text[2].startswith("**Real-model run: every turn was sent to a real model, qwen2.5:7b (ollama)")


def test_a_failed_turns_cell_folds_its_model_calls_from_the_transcripts(results_path: Path) -> None:
    def call(mode: str, turn: int, index: int, wrote: str) -> str:
        return CallTranscript(
            mode=mode,
            scenario="conversacion-larga",
            turn=turn,
            repetition=1,
            call=index,
            messages=[
                Said(role="system", text="Eres…"),
                Said(role="human", text=f"¿Cuánto vendimos? <{turn}>"),
            ],
            output=Said(role="ai", text=wrote, finish_reason="stop"),
        ).model_dump_json()

    lines = [
        call("toolcalling", 3, 1, "second <call>"),
        call("toolcalling", 3, 0, '{"name": "clima_mañana"}'),
        call("planner", 3, 0, "a turn that passed"),
        "not json",
        '{"kind": "call", "mode": 3}',
    ]
    (results_path.parent / TRANSCRIPTS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")

    html = write_reports(results_path).html.read_text(encoding="utf-8")

    [folded] = re.findall(r'<details class="transcript">.*?</details>', html, flags=re.DOTALL)
    assert "model calls: 2" in folded and "sent 2 messages" in folded
    assert folded.index("clima_mañana") < folded.index("second &lt;call&gt;")  # in call order, escaped
    assert "human: ¿Cuánto vendimos? &lt;3&gt;" in folded and "(stopped: stop)" in folded
    assert "a turn that passed" not in html  # only failed turns fold their calls
    (results_path.parent / TRANSCRIPTS_FILE).unlink()
    assert 'class="transcript"' not in write_reports(results_path).html.read_text(encoding="utf-8")
