"""``erp-ai report`` and ``compare``: render the reports of one run, or of several side by side, and what
changed from one run to the next."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from benchmarks.cli.bench import (
    REPORTS_DIR,
    PricingOpt,
    bench_error,
    default_out_dir,
    fail_if_no_model_answered,
    read_run,
    refused,
    rescore_recorded,
    write_readme,
)
from benchmarks.compare import Comparison, compare_results
from benchmarks.report import (
    combined_runs,
    print_combined,
    print_summary,
    render_comparison_markdown,
    write_combined_reports,
    write_reports,
)
from benchmarks.report.runs import regime_of, results_path
from benchmarks.rescore import ScenarioNotFound
from benchmarks.results import RESULTS_FILE, RunResults
from benchmarks.scenario import ScenarioError
from benchmarks.scoring.version import scorer_version
from benchmarks.transcripts import TRANSCRIPTS_FILE
from shared.errors import ErpAiError

COMBINED_DIR = "combined"
"""Where ``erp-ai report`` writes a report of several runs by default: ``reports/combined/<timestamp>/``."""

FailOnRegressionOpt = Annotated[
    bool,
    typer.Option(
        help="Two runs: exit with status 1, after writing the reports, when any mode or category regressed "
        "from the first run to the second: costlier or slower beyond tolerance, or less accurate by more "
        "than chance (exact McNemar p < 0.05 over the turns both runs ran)."
    ),
]


def report(
    results: Annotated[
        list[Path],
        typer.Argument(
            help=f"A {RESULTS_FILE} written by `erp-ai bench`, or its folder; give several to put their runs "
            "side by side in one report, two (the earlier first) to add what changed between them."
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write the reports. Default: next to RESULTS (one run), or "
            "reports/combined/<timestamp>/ (several)."
        ),
    ] = None,
    readme: Annotated[
        Path | None,
        typer.Option(
            help="Also write the summary figures into this README's marked benchmark block (one run)."
        ),
    ] = None,
    pricing: PricingOpt = None,
    fail_on_regression: FailOnRegressionOpt = False,
) -> None:
    """Re-render the terminal summary, report.md, report.html and turns.csv from a results file, or from
    several.

    One run: its reports are written beside it. Several (e.g. a real-model run, the offline structure run
    and a simulated-GPU run): one combined report, every run's regime labeled, a verdict row per run and
    mode. Two runs, the earlier first: the combined report adds "Changes from A to B" per mode and
    category (regressions first, then drops chance explains, then the turns that flipped), printed on the
    terminal too. turns.csv holds one row per turn (a run column for several runs). A file cut short (its
    last line incomplete) or holding fewer turns than its run planned is reported from the turns read, with
    a warning on the terminal and in each report's header (and is not written into a README); a file with
    no complete record is an error (exit 2). Example: erp-ai report reports/before reports/latest
    --fail-on-regression
    """
    console = Console()
    if fail_on_regression and len(results) != 2:
        given = "one was given" if len(results) == 1 else f"{len(results)} were given"
        raise bench_error(console, f"--fail-on-regression compares two runs, and {given}: give RUN_A RUN_B")
    runs = [(path, _read_run(console, path, named=len(results) > 1)) for path in results]
    apart = _regimes_apart(runs)
    if fail_on_regression and apart:
        raise bench_error(console, f"--fail-on-regression compares runs of one regime: {apart}")
    if len(runs) > 1:
        if readme is not None:
            raise bench_error(console, "--readme takes one run: give one RESULTS to write its README block")
        comparison = _report_combined(console, runs, out, pricing, apart)
        if fail_on_regression and comparison is not None and comparison.regressions:
            count, a, b = len(comparison.regressions), comparison.a.label, comparison.b.label
            regressions = f"{count} regression{'s' if count > 1 else ''}"
            console.print(
                f"[red]{regressions} from {escape(a)} to {escape(b)}:[/red] exit 1 (--fail-on-regression)"
            )
            raise typer.Exit(code=1)
        return
    path, run = runs[0]
    if readme is not None and run.read_warnings:  # published figures must come from a whole run
        raise bench_error(
            console, f"not writing {readme} from an incomplete results file: {run.read_warnings[0]}"
        )
    with refused(console):  # a pricing file that cannot be read
        transcripts = results_path(path).parent / TRANSCRIPTS_FILE
        files = write_reports(run, out or results_path(path).parent, pricing=pricing, transcripts=transcripts)
    print_summary(console, files.summary, run.meta, run)
    fail_if_no_model_answered(console, run)  # before any README block is written
    if readme is not None:
        write_readme(console, run, files.summary, readme)
    console.print(f"{files.markdown} · {files.html} · {files.turns}")


def compare(
    run_a: Annotated[Path, typer.Argument(help="The earlier run: its results.jsonl or its directory.")],
    run_b: Annotated[Path, typer.Argument(help="The later run: its results.jsonl or its directory.")],
    out: Annotated[
        Path | None,
        typer.Option(help="Where to write the reports. Default: reports/combined/<timestamp>/."),
    ] = None,
    fail_on_regression: FailOnRegressionOpt = False,
) -> None:
    """Shorthand for `erp-ai report RUN_A RUN_B --out DIR [--fail-on-regression]`: the same reports, output
    and exit codes.

    The combined report.md and report.html of both runs, with what changed from RUN_A to RUN_B per mode
    and category (per target and mode when the runs have targets): accuracy with Wilson 95% intervals,
    model calls, tokens, latency p50, time to the first answer p50 (simulated and measured) and valid-plan
    rate, regressions first, then the turns that flipped; and turns.csv. Example: erp-ai compare
    reports/before reports/latest --fail-on-regression
    """
    report([run_a, run_b], out=out, readme=None, pricing=None, fail_on_regression=fail_on_regression)


def _report_combined(
    console: Console,
    runs: list[tuple[Path, RunResults]],
    out: Path | None,
    pricing: Path | None,
    apart: str | None,
) -> Comparison | None:
    """Write and print the report of several runs side by side; of two of one regime (``apart``: why they
    are not, from :func:`_regimes_apart`), what changed from the first to the second, which is returned."""
    with refused(console):  # a pricing file that cannot be read
        combined = combined_runs([(results_path(path), run) for path, run in runs], pricing=pricing)
    comparison = None
    if apart:
        console.print(f"[yellow]not compared:[/yellow] {escape(apart)}")
    elif len(runs) == 2:
        (path_a, before), (path_b, after) = runs
        comparison = compare_results(
            before,
            after,
            path_a=results_path(path_a),
            path_b=results_path(path_b),
            labels=(combined[0].label, combined[1].label),
        )
    with refused(console):  # a report path that is a symbolic link
        out_dir = out or default_out_dir(REPORTS_DIR / COMBINED_DIR)
        markdown, html, turns = write_combined_reports(combined, out_dir, comparison=comparison)
    print_combined(console, combined)
    if comparison is not None:
        console.print(render_comparison_markdown(comparison), markup=False, highlight=False, soft_wrap=True)
    console.print(f"{markdown} · {html} · {turns}")
    return comparison


def _regimes_apart(runs: list[tuple[Path, RunResults]]) -> str | None:
    """Why two runs are not compared (one is the offline stand-in's, the other a real model's: their
    accuracy, tokens and times measure different things), or ``None`` when they may be (or are not two)."""
    if len(runs) != 2:
        return None
    (path_a, a), (path_b, b) = runs
    regime_a, regime_b = regime_of(a.meta), regime_of(b.meta)
    if regime_a.structure_only == regime_b.structure_only:
        return None
    return (
        f"{results_path(path_a)} is a {regime_a.kind} run and {results_path(path_b)} a {regime_b.kind} run; "
        "a stand-in run is compared only with another stand-in run"
    )


def _read_run(console: Console, path: Path, *, named: bool = False) -> RunResults:
    """The run at ``path`` (a results file or its folder), scored by today's scorer; exit 2 when it cannot be
    read, holds nothing, or was scored by another scorer and cannot be scored again here. Its read warnings
    are printed (the reports' headers say the same), naming the file when ``named``."""
    results = results_path(path)
    run = read_run(console, results)
    if run.empty:
        raise bench_error(console, f"{results} holds no complete record: nothing to report")
    where = f"{results}: " if named else ""
    for warning in run.read_warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(where + warning)}")
    recorded, current = run.meta.scorer_version, scorer_version()
    if recorded is None:
        console.print(
            f"[yellow]warning:[/yellow] {escape(where)}the scorer that scored this run is not recorded; "
            f"`erp-ai rescore {escape(str(results))}` scores it with today's"
        )
    elif recorded != current:  # no figure of an old scorer is rendered as current
        try:
            run, summary = rescore_recorded(run)
        except (ScenarioError, ScenarioNotFound, ErpAiError) as exc:
            raise bench_error(
                console,
                f"{results} was scored by scorer {recorded}, not today's {current}, and cannot be scored "
                f"again here ({exc}); run `erp-ai rescore {results} --scenarios …` and report its output",
            ) from None
        console.print(
            f"{escape(where)}scored again with today's scorer {current} (recorded by {recorded}): "
            f"{len(summary.now_passing)} turns now pass, {len(summary.now_failing)} now fail"
        )
    return run
