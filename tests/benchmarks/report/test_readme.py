"""The README's benchmark block is written from a results file (benchmarks/report/readme.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli import app
from benchmarks.report import summarize
from benchmarks.report.readme import end_marker, readme_block, start_marker, update_readme
from benchmarks.results import read_results

START, END = start_marker("measured"), end_marker("measured")


def test_the_block_holds_the_summary_table_the_findings_and_its_provenance(results_path: Path) -> None:
    results = read_results(results_path)
    block = readme_block(results, summarize(results.rows, results.meta.modes))

    assert block.startswith(START) and block.endswith(END)
    assert "Measured by `erp-ai bench`" in block and "provider `offline`" in block
    assert "| planner | 12 |" in block
    assert "planner never exceeded 2 model calls per turn" in block
    assert "deterministic stand-in" in block


def test_update_replaces_only_the_marked_block(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\n{START}\nold figures\n{END}\n\n## After\n", encoding="utf-8")

    update_readme(readme, "measured", f"{START}\nnew figures\n{END}")

    assert readme.read_text(encoding="utf-8") == f"# Title\n\n{START}\nnew figures\n{END}\n\n## After\n"


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


def test_each_latency_profile_writes_its_own_block(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    gpu = (start_marker("gpu-8b"), end_marker("gpu-8b"))
    readme.write_text(f"{START}\nmeasured\n{END}\n{gpu[0]}\nold\n{gpu[1]}\n", encoding="utf-8")

    update_readme(readme, "gpu-8b", f"{gpu[0]}\nnew\n{gpu[1]}")

    assert readme.read_text(encoding="utf-8") == f"{START}\nmeasured\n{END}\n{gpu[0]}\nnew\n{gpu[1]}\n"


def test_a_run_without_the_modelled_prefix_cache_writes_its_own_block(results_path: Path) -> None:
    from benchmarks.report.readme import block_name

    results = read_results(results_path)
    profiled = results.model_copy(
        update={"meta": results.meta.model_copy(update={"latency_profile": "gpu-8b"})}
    )
    uncached = profiled.model_copy(update={"meta": profiled.meta.model_copy(update={"prompt_cache": False})})

    assert block_name(profiled) != block_name(uncached) == "gpu-8b-no-prompt-cache"
