"""``turns.csv`` (benchmarks/report/turns_csv.py): one row per recorded turn beside every report.md
(``bench``, ``report`` of one run or several), the columns a reader filters on, no cell a spreadsheet
evaluates, written whole and never through a symbolic link."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.report import write_reports
from benchmarks.report.turns_csv import render_turns_csv, spreadsheet_text
from benchmarks.results import RunMeta, RunResults, read_results
from tests.benchmarks.report.sample_results import MODES, rows, turn_row, write_results
from tests.benchmarks.test_bench_cli import bench_args

runner = CliRunner()

COLUMNS = [
    "target", "mode", "scenario", "category", "split", "turn", "repetition", "warmup", "passed", "failure",
    "model_calls", "input_tokens", "output_tokens", "cached_input_tokens", "latency_ms", "first_answer_ms",
    "simulated_latency_ms", "simulated_first_answer_ms", "user", "answer",
]  # fmt: skip


def _table(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_one_row_per_turn_with_the_columns_a_reader_filters_on(results_path: Path) -> None:
    files = write_reports(results_path)

    assert files.turns == results_path.parent / "turns.csv", "beside report.md"
    with files.turns.open(encoding="utf-8", newline="") as handle:
        assert next(csv.reader(handle)) == COLUMNS
    table = _table(files.turns)
    assert len(table) == len(read_results(results_path).rows) == 36
    failed = next(r for r in table if r["mode"] == "toolcalling" and r["turn"] == "3")
    assert failed["passed"] == "false" and failed["failure"] == "provider" and failed["answer"] == ""
    first = table[0]
    assert (
        first["user"] == "¿Cuánto vendimos en 2001? <b>" and first["answer"] == "Vendimos ₲1.000.000 <script>"
    )
    assert (first["target"], first["split"], first["warmup"], first["passed"]) == (
        "default",
        "suite",
        "false",
        "true",
    )
    assert (first["model_calls"], first["input_tokens"], first["latency_ms"]) == ("2", "1000", "1.8")
    assert first["cached_input_tokens"] == first["first_answer_ms"] == first["simulated_latency_ms"] == ""


def test_warm_up_and_held_out_turns_are_rows_marked_as_such() -> None:
    results = RunResults(
        meta=RunMeta(modes=["planner"]),
        rows=[
            turn_row(warmup=True, repetition=0),
            turn_row(split="heldout", simulated_model_ms=100.0, harness_ms=2.0, first_answer_ms=50.0),
        ],
    )

    table = list(csv.DictReader(io.StringIO(render_turns_csv([(None, results)]))))

    assert [(r["warmup"], r["repetition"], r["split"]) for r in table] == [
        ("true", "0", "suite"),
        ("false", "1", "heldout"),
    ]
    assert (table[1]["simulated_latency_ms"], table[1]["first_answer_ms"]) == ("102.0", "50.0")


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_a_cell_that_starts_like_a_formula_gets_a_leading_quote(start: str) -> None:
    assert spreadsheet_text(f'{start}HYPERLINK("http://x")') == f'\'{start}HYPERLINK("http://x")'
    assert spreadsheet_text(f"a{start}b") == f"a{start}b", "only at the start"


def test_no_text_field_of_a_results_file_reaches_a_spreadsheet_as_a_formula() -> None:
    formula = '=HYPERLINK("http://evil","x")'
    row = turn_row(user=formula, answer="+1+1", scenario="-2", category="@SUM(A1)", target="\tx")
    results = RunResults(meta=RunMeta(modes=["planner"]), rows=[row])

    [cells] = list(csv.DictReader(io.StringIO(render_turns_csv([("=run", results)]))))

    assert cells["run"] == "'=run" and cells["user"] == "'" + formula and cells["answer"] == "'+1+1"
    assert (cells["scenario"], cells["category"], cells["target"]) == ("'-2", "'@SUM(A1)", "'\tx")


def test_text_with_commas_quotes_and_lines_reads_back_whole() -> None:
    answer = 'Vendimos ₲1.000, "según el ERP";\nsegunda línea'
    results = RunResults(meta=RunMeta(modes=["planner"]), rows=[turn_row(answer=answer)])

    [cells] = list(csv.DictReader(io.StringIO(render_turns_csv([(None, results)]))))

    assert cells["answer"] == answer


def test_a_report_of_several_runs_writes_one_table_with_a_run_column(
    app: typer.Typer, tmp_path: Path
) -> None:
    meta = RunMeta(modes=MODES, scenarios=1, turns=12)
    first = write_results(tmp_path / "first" / "results.jsonl", meta, rows())
    second = write_results(tmp_path / "second" / "results.jsonl", meta, rows()[:12])
    out = tmp_path / "both"

    result = runner.invoke(
        app, ["report", str(first), str(second), "--out", str(out)], env={"COLUMNS": "200"}
    )

    assert result.exit_code == 0, result.output
    assert "turns.csv" in result.output
    table = _table(out / "turns.csv")
    assert list(table[0]) == ["run", *COLUMNS]
    assert [r["run"] for r in table] == ["first"] * 36 + ["second"] * 12


def test_report_of_one_run_writes_it_beside_report_md(app: typer.Typer, results_path: Path) -> None:
    result = runner.invoke(app, ["report", str(results_path)], env={"COLUMNS": "200"})

    assert result.exit_code == 0, result.output
    assert (results_path.parent / "turns.csv").exists() and (results_path.parent / "report.md").exists()
    assert len(_table(results_path.parent / "turns.csv")) == 36


def test_a_symlinked_turns_csv_is_never_written_through(
    app: typer.Typer, results_path: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.csv"
    elsewhere.write_text("mine", encoding="utf-8")
    (results_path.parent / "turns.csv").symlink_to(elsewhere)

    result = runner.invoke(app, ["report", str(results_path)], env={"COLUMNS": "300"})

    assert result.exit_code == 2 and "symbolic link" in result.output
    assert elsewhere.read_text(encoding="utf-8") == "mine"
    assert not (results_path.parent / "report.md").exists(), "no report is written when one path is a link"


def test_turns_csv_is_replaced_whole_and_leaves_no_temporary_file(results_path: Path) -> None:
    previous = results_path.parent / "turns.csv"
    previous.write_text("an older table\n", encoding="utf-8")
    inode = previous.stat().st_ino

    write_reports(results_path)

    assert previous.stat().st_ino != inode, "a new file renamed over the old one, not the old one rewritten"
    assert len(_table(previous)) == 36
    assert not list(results_path.parent.glob("*.tmp"))


def test_bench_writes_turns_csv_beside_its_report(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    out = tmp_path / "run"

    result = runner.invoke(app, bench_args(tiny_suite_path, out, erp_db_url))

    assert result.exit_code == 0, result.output
    assert len(_table(out / "turns.csv")) == len(read_results(out / "results.jsonl").rows) == 9
