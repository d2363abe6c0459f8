"""The README's benchmark block is written from a results file (benchmarks/report/readme.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli.app import app
from benchmarks.provenance import Provenance
from benchmarks.report import summarize
from benchmarks.report.readme import block_name, end_marker, readme_block, start_marker, update_readme
from benchmarks.results import RunMeta, read_results
from tests.benchmarks.report.sample_results import MODES, rows, write_results

START, END = start_marker("measured"), end_marker("measured")


def test_the_block_opens_with_what_it_measures_and_holds_the_summary_table_findings_and_provenance(
    results_path: Path,
) -> None:
    results = read_results(results_path)
    block = readme_block(results, summarize(results.rows, results.meta.modes))

    assert block.startswith(START) and block.endswith(END)
    assert "Measured by `erp-ai bench`" in block and "provider `offline`" in block
    assert "| planner | 12 |" in block
    assert "planner never exceeded 2 model calls per turn" in block
    assert "deterministic stand-in" in block
    assert block.splitlines()[2].startswith("**Structure run:") and "not accuracy" in block.splitlines()[2]


def test_a_readme_without_markers_is_refused_untouched(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no 'measured' benchmark-figures block"):
        update_readme(readme, "measured", f"{START}\n{END}")
    assert readme.read_text(encoding="utf-8") == "# Title\n"


def test_report_readme_option_writes_the_block(results_path: Path, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"{START}\n{END}\n", encoding="utf-8")

    result = CliRunner().invoke(app, ["report", str(results_path), "--readme", str(readme)])

    assert result.exit_code == 0, result.output
    assert "| toolcalling-full | 12 |" in readme.read_text(encoding="utf-8")


def test_update_replaces_only_the_marked_block_each_latency_profile_having_its_own(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    gpu = (start_marker("gpu-8b"), end_marker("gpu-8b"))
    readme.write_text(
        f"# Title\n\n{START}\nmeasured\n{END}\n{gpu[0]}\nold\n{gpu[1]}\n\n## After\n", encoding="utf-8"
    )

    update_readme(readme, "gpu-8b", f"{gpu[0]}\nnew\n{gpu[1]}")

    expected = f"# Title\n\n{START}\nmeasured\n{END}\n{gpu[0]}\nnew\n{gpu[1]}\n\n## After\n"
    assert readme.read_text(encoding="utf-8") == expected


def test_a_run_without_the_modelled_prefix_cache_writes_its_own_block(results_path: Path) -> None:
    results = read_results(results_path)
    profiled = results.model_copy(
        update={"meta": results.meta.model_copy(update={"latency_profile": "gpu-8b"})}
    )
    uncached = profiled.model_copy(update={"meta": profiled.meta.model_copy(update={"prompt_cache": False})})

    assert block_name(profiled) != block_name(uncached) == "gpu-8b-no-prompt-cache"


REAL = ("real-model", start_marker("real-model"), end_marker("real-model"))


def _real_run(tmp_path: Path) -> Path:
    meta = RunMeta(
        provider="openai",
        model="qwen2.5-coder-1.5b-instruct",
        base_url="http://127.0.0.1:8101/v1",
        modes=MODES[:2],
        scenarios=1,
        turns=12,
        max_tokens=512,
        timeout=900.0,
        scenario_paths=["benchmarks/scenarios/06_conversacion_larga.yaml"],
        provenance=Provenance(git_commit="57d2d3a54d16ffdc", git_dirty=False),
    )
    records = [
        r.model_copy(update={"cached_input_tokens": 250, "first_answer_ms": 1200.0, "ungrounded_figures": []})
        for r in rows()
        if r.mode in MODES[:2]
    ]
    return write_results(tmp_path / "real" / "results.jsonl", meta, records)


def test_a_real_model_run_writes_the_real_model_block_with_what_a_reader_needs(tmp_path: Path) -> None:
    results = read_results(_real_run(tmp_path))
    block = readme_block(results, summarize(results.rows, results.meta.modes))

    assert block_name(results) == "real-model"
    assert block.startswith(REAL[1]) and block.endswith(REAL[2])
    assert (
        "**Real-model run: every turn was sent to a real model, qwen2.5-coder-1.5b-instruct (openai)" in block
    )
    table = block.split("| mode |")[1].split("\n\n")[0]
    for column in ("accuracy (95% CI)", "calls/turn", "cached", "latency p50 / p95 ms", "first answer"):
        assert column in table
    assert "ungrounded | claimed actions | recovered | failed (kinds) |" in table
    assert "| planner | 12 | 100.0% (75.8–100.0) | 2.00 | 1,000 / 50 | 25% |" in table
    assert "| 0 | 0 | – | 0 |" in table, "none ungrounded or claimed, recovery is tool calling's"
    assert "| 0 | 0 | 0 | 1 (1 provider) |" in table
    assert "- Accuracy on 12 paired turns: planner 100.0%, toolcalling 91.7%" in block
    assert "McNemar p = 1.00: not significant." in block
    assert (
        "Scenario categories covered (turns run of the packaged scenarios', tuning suite and held-out "
        "questions together): long_conversation 12/62;" in block
    )
    assert "not covered: adversarial, articulo," in block
    assert "Scorer check:" in block
    assert "From a checkout at commit `57d2d3a54d16`:" in block
    assert (
        "OPENAI_API_KEY=unused erp-ai bench --provider openai --model qwen2.5-coder-1.5b-instruct --base-url "
        "http://127.0.0.1:8101/v1 --modes planner,toolcalling --scenarios "
        "benchmarks/scenarios/06_conversacion_larga.yaml --max-tokens 512 --timeout 900" in block
    )


def test_report_readme_writes_the_real_model_block_of_a_real_run(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Results\n\n{REAL[1]}\n{REAL[2]}\n\n{START}\nkept\n{END}\n", encoding="utf-8")

    result = CliRunner().invoke(app, ["report", str(_real_run(tmp_path)), "--readme", str(readme)])

    assert result.exit_code == 0, result.output
    text = readme.read_text(encoding="utf-8")
    assert "| toolcalling | 12 | 91.7% (64.6–98.5) |" in text.split(REAL[2])[0]
    assert f"{START}\nkept\n{END}" in text, "the other blocks are left alone"


def test_the_real_model_block_shows_where_the_time_goes_when_the_run_kept_its_calls(tmp_path: Path) -> None:
    from shared.llm.usage import ModelCall

    results = read_results(_real_run(tmp_path))
    calls = [
        ModelCall(role="plan", ms=900, first_token_ms=300),
        ModelCall(role="answer", ms=1100, first_token_ms=400),
    ]
    rows = [row.model_copy(update={"calls": calls}) if row.mode == "planner" else row for row in results.rows]
    kept = results.model_copy(update={"rows": rows})

    block = readme_block(kept, summarize(kept.rows, kept.meta.modes))

    assert "| mode | turns | calls/turn | first tokens | writing | operations | rest | turn |" in block
    assert "| planner | plan | 12 | 900 | 300 |" in block
    assert "first tokens" not in readme_block(results, summarize(results.rows, results.meta.modes))
