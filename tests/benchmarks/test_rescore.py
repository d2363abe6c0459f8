"""Re-scoring a recorded run reproduces its verdicts and calls no model (benchmarks/rescore.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.rescore import ScenarioNotFound, rescore
from benchmarks.results import read_results
from benchmarks.runner import RunConfig, run_suite
from benchmarks.scenario import load_scenarios
from benchmarks.scoring.turn import TurnScore
from benchmarks.scoring.version import scorer_version
from tests.benchmarks.report.sample_results import write_results


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, erp_db_url: str) -> Path:
    """A real offline run over scenarios of several kinds (permissions included), read back from disk."""
    suite = load_scenarios(tags=["articulo", "permisos"])
    out = tmp_path_factory.mktemp("run")
    config = RunConfig(modes=["planner", "toolcalling"], out_dir=out)
    run_suite(suite, config, db_url=erp_db_url, show_progress=False)
    return out / "results.jsonl"


def test_rescoring_a_run_reproduces_every_verdict(recorded: Path, registry: Any, erp: Any) -> None:
    results = read_results(recorded)
    again, summary = rescore(results, load_scenarios(), registry, erp)
    assert summary.turns == len(results.rows) > 10
    assert summary.changed == 0
    before = [(row.score.passed, row.score.details) for row in results.rows]
    assert [(row.score.passed, row.score.details) for row in again.rows] == before


def test_a_changed_verdict_is_counted_both_ways(recorded: Path, registry: Any, erp: Any) -> None:
    results = read_results(recorded)
    flipped = [r.model_copy(update={"score": TurnScore(passed=not r.score.passed)}) for r in results.rows]
    _, summary = rescore(results.model_copy(update={"rows": flipped}), load_scenarios(), registry, erp)
    passing = sum(row.score.passed for row in results.rows)
    assert len(summary.now_passing) == passing > 0  # recorded as failing, passing in fact
    assert len(summary.now_failing) == len(flipped) - passing


def test_results_of_other_scenario_files_are_refused_with_what_to_pass(
    recorded: Path, registry: Any, erp: Any
) -> None:
    results = read_results(recorded)
    with pytest.raises(ScenarioNotFound, match="--scenarios"):
        rescore(results, load_scenarios(tags=["small_talk"]), registry, erp)


def test_erp_ai_rescore_writes_the_rescored_run_and_its_reports_beside_it(
    recorded: Path, app: typer.Typer, erp_db_url: str
) -> None:
    result = CliRunner().invoke(app, ["rescore", str(recorded.parent), "--db-url", erp_db_url])
    assert result.exit_code == 0, result.output
    assert "re-scored: 0 now pass, 0 now fail" in " ".join(result.output.split())
    rescored = recorded.parent / "rescored"
    assert (rescored / "report.md").exists() and (rescored / "report.html").exists()
    assert len(read_results(rescored / "results.jsonl").rows) == len(read_results(recorded).rows)


def test_erp_ai_rescore_of_a_missing_file_is_a_one_line_error(app: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["rescore", str(tmp_path / "nothing.jsonl")])
    assert result.exit_code == 2 and "does not exist" in " ".join(result.output.split())  # however wrapped


def test_a_run_records_the_scorer_that_scored_it(recorded: Path) -> None:
    assert read_results(recorded).meta.scorer_version == scorer_version()


def stale(recorded: Path, directory: Path) -> Path:
    """A copy of ``recorded`` as another scorer left it: its run line names that scorer, and every verdict
    is the opposite of today's."""
    results = read_results(recorded)
    meta = results.meta.model_copy(update={"scorer_version": "0123456789ab"})
    rows = [r.model_copy(update={"score": TurnScore(passed=not r.score.passed)}) for r in results.rows]
    directory.mkdir()
    return write_results(directory / "results.jsonl", meta, rows)


def test_report_never_renders_another_scorers_verdicts_as_current(
    recorded: Path, app: typer.Typer, cli_env: dict[str, str | None], tmp_path: Path
) -> None:
    old = stale(recorded, tmp_path / "old")
    written = old.read_text(encoding="utf-8")

    result = CliRunner().invoke(app, ["report", str(old)], env=cli_env)

    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    passing = sum(row.score.passed for row in read_results(recorded).rows)
    assert "scored again with today's scorer" in said and f"{passing} turns now pass" in said
    assert (tmp_path / "old" / "report.md").read_text(encoding="utf-8") == rendered(recorded, tmp_path)
    assert old.read_text(encoding="utf-8") == written  # the recorded file is input, never rewritten


def rendered(recorded: Path, tmp_path: Path) -> str:
    """The report.md of ``recorded`` as today's scorer scored it, rendered in a folder of the same name."""
    from benchmarks.report import write_reports

    return write_reports(read_results(recorded), tmp_path / "today" / "old").markdown.read_text(
        encoding="utf-8"
    )


def test_compare_reads_both_runs_with_todays_scorer(
    recorded: Path, app: typer.Typer, cli_env: dict[str, str | None], tmp_path: Path
) -> None:
    old = stale(recorded, tmp_path / "old")
    args = ["compare", str(old), str(recorded), "--out", str(tmp_path), "--fail-on-regression"]

    result = CliRunner().invoke(app, args, env=cli_env)

    assert result.exit_code == 0, result.output  # no turn flipped: both were scored by today's scorer


def test_a_run_of_another_scorer_that_cannot_be_scored_again_is_refused_with_what_to_run(
    recorded: Path, app: typer.Typer, cli_env: dict[str, str | None], tmp_path: Path
) -> None:
    old = stale(recorded, tmp_path / "old")
    results = read_results(old)
    elsewhere = results.meta.model_copy(update={"scenario_paths": [str(tmp_path / "gone.yaml")]})
    write_results(old, elsewhere, results.rows)

    result = CliRunner().invoke(app, ["report", str(old)], env=cli_env)

    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "was scored by scorer 0123456789ab" in said and "erp-ai rescore" in said
    assert not (tmp_path / "old" / "report.md").exists()
