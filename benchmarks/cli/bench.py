"""``erp-ai bench``: run the scenario suite, score each turn and write its reports (``report`` and ``compare``
render them again: :mod:`benchmarks.cli.report`)."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from benchmarks.cli.common import MaxTokensOpt, TimeoutOpt, given, open_erp
from benchmarks.modes import ALL_MODES, parse_modes
from benchmarks.report import (
    Summary,
    print_summary,
    write_reports,
)
from benchmarks.report.readme import block_name, readme_block, update_readme
from benchmarks.rescore import RescoreSummary, rescore
from benchmarks.results import RunResults, read_results
from benchmarks.runner import RunConfig, run_suite
from benchmarks.scenario import load_scenarios
from benchmarks.targets import TARGET_SYNTAX, BenchTarget, load_targets_file, parse_targets, unique_targets
from benchmarks.transcripts import TRANSCRIPTS_FILE
from planner_mode.plan_schema import PlanSchemaStyle
from shared.errors import ConfigurationError
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S
from shared.operations.sales import sales_registry

REPORTS_DIR = Path("reports")
PricingOpt = Annotated[
    Path | None,
    typer.Option(help="Pricing YAML whose models replace or add to benchmarks/pricing.yaml (cost per turn)."),
]
LATEST = "latest"


def default_out_dir(root: Path = REPORTS_DIR) -> Path:
    """``reports/<timestamp>/`` (a suffix keeps it unique within one second)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    names = itertools.chain([stamp], (f"{stamp}-{counter}" for counter in itertools.count(2)))
    return next(root / name for name in names if not (root / name).exists())


def point_latest(out_dir: Path, root: Path = REPORTS_DIR) -> Path:
    """Make ``reports/latest`` a relative symlink to ``out_dir`` (so the reports folder can move, or be copied
    or mounted elsewhere), or a copy where symlinks are not available."""
    latest = root / LATEST
    if out_dir.resolve() == latest.resolve():
        return latest
    if latest.is_symlink() or latest.is_file():
        latest.unlink()
    elif latest.is_dir():
        shutil.rmtree(latest)
    try:
        target = os.path.relpath(out_dir.resolve(), latest.parent.resolve())
        latest.symlink_to(target, target_is_directory=True)
    except OSError:
        shutil.copytree(out_dir, latest)
    return latest


def bench_error(console: Console, message: str) -> typer.Exit:
    """Print ``message`` as every command prints an error (``Error: …``, one line) and exit 2."""
    console.print(f"[bold red]Error:[/] {escape(message)}", soft_wrap=True)
    return typer.Exit(code=2)


@contextmanager
def refused(console: Console, errors: tuple[type[Exception], ...] = (ConfigurationError,)) -> Iterator[None]:
    """One of ``errors`` as :func:`bench_error`'s line and exit 2."""
    try:
        yield
    except errors as exc:
        raise bench_error(console, str(exc)) from None


def bench(
    ctx: typer.Context,
    modes: Annotated[
        list[str] | None,
        typer.Option(
            help=f"Modes to compare, comma-separated or repeated: {', '.join(ALL_MODES)}. Default: all."
        ),
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(help="Model provider: offline (default), ollama, gemini or openai. Not with --target."),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model name (each provider has a default). Not with --target.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="Provider base URL (e.g. a local Ollama). Not with --target.")
    ] = None,
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            help=f"A model of the matrix, {escape(TARGET_SYNTAX)}; repeat for several: every target runs "
            "every mode into one results.jsonl and one report (a grid: targets × modes). provider alone uses "
            "its default model. Example: --target a=offline --target "
            "llama=ollama:llama3.1:8b@http://127.0.0.1:11434",
        ),
    ] = None,
    targets_file: Annotated[
        Path | None,
        typer.Option(
            help="YAML run file listing targets ('targets:' with specs or name/provider/model/base_url "
            "mappings); adds to --target."
        ),
    ] = None,
    prompt_cache: Annotated[
        bool,
        typer.Option(
            help="Offline provider: model a prefix cache (cached input tokens, faster simulated prefill). "
            "--no-prompt-cache measures without it."
        ),
    ] = True,
    scenarios: Annotated[
        list[Path] | None,
        typer.Option(
            "--scenarios", help="Scenario YAML file or directory; repeat for several. Default: the suite."
        ),
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option(help="Keep scenarios with this tag, category or id; repeatable.")
    ] = None,
    repeat: Annotated[int, typer.Option(min=1, help="Repetitions per scenario (pass^k uses them).")] = 1,
    warmup: Annotated[
        int,
        typer.Option(min=0, help="Warm-up turns per mode run first; recorded, left out of every figure."),
    ] = 0,
    concurrency: Annotated[
        int, typer.Option(min=1, help="Scenarios run at once in one event loop (useful with real providers).")
    ] = 1,
    latency_profile: Annotated[
        str | None, typer.Option(help="Offline only: simulate gpu-8b, cpu-8b or gemini-flash model latency.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Output directory. Default: reports/<timestamp>/ (and reports/latest)."),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            help="Keep finished (target, mode, scenario, repetition) units in --out (default: latest)."
        ),
    ] = False,
    fail_under: Annotated[
        float | None,
        typer.Option(
            min=0,
            max=100,
            help="Exit with code 1 if any mode's accuracy is below this (0–1 or %, up to 100).",
        ),
    ] = None,
    db_url: Annotated[
        str | None, typer.Option(help="ERP database URL. Default: $ERP_AI_DB_URL or .erp-ai/.")
    ] = None,
    structured: Annotated[
        bool, typer.Option(help="Tool calling ends with a structured answer (respuesta/memoria/estado).")
    ] = False,
    plan_schema: Annotated[
        PlanSchemaStyle,
        typer.Option(
            help="The planner's call-1 constraint: union (each operation with its own parameters), enum "
            "(operation names only), free (any operation) or none (no structured output asked for)."
        ),
    ] = "union",
    tool_call_recovery: Annotated[
        bool,
        typer.Option(
            help="Tool calling recovers a reply that is only a tool call written as text (fenced or bare "
            "JSON, <tool_call> tags) into that call. --no-tool-call-recovery: such a reply is a model_output "
            "failure."
        ),
    ] = True,
    max_tokens: MaxTokensOpt = DEFAULT_MAX_TOKENS,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    progress: Annotated[bool, typer.Option(help="Show the progress bar.")] = True,
    readme: Annotated[
        Path | None,
        typer.Option(help="Also write the summary figures into this README's marked benchmark block."),
    ] = None,
    pricing: PricingOpt = None,
) -> None:
    """Run the scenario suite in every mode, score each turn against the ERP, and write the reports.

    Writes results.jsonl (streamed), transcripts.jsonl (what each model call was sent and wrote), report.md,
    a self-contained report.html and turns.csv (one row per turn) to --out, and prints a summary table.
    Example: erp-ai bench --modes planner,toolcalling --repeat 3 --latency-profile gpu-8b

    Model matrix: erp-ai bench --target a=offline --target b=offline:offline-sales --latency-profile gpu-8b
    --repeat 2 runs both targets in every mode (each with its own model and conversations) into one report.
    """
    console = Console()
    with refused(console):
        mode_list = parse_modes(",".join(modes or ALL_MODES))
        _check_tool_calling_options(ctx, mode_list)
        targets = _targets(target or [], targets_file, provider, model, base_url)
        suite = load_scenarios(scenarios or None, tags=tag or ())
        if not suite:
            raise ConfigurationError("no scenario matches the selection")
        if out is None:
            latest = REPORTS_DIR / LATEST
            out = latest.resolve() if resume and latest.exists() else default_out_dir()
        settings = {**ctx.params, "modes": list(mode_list), "out_dir": out, "provider": provider or "offline"}
        chosen = {"targets": targets, "scenario_paths": [str(p) for p in scenarios or []], "tags": tag or []}
        config = RunConfig.model_validate({**settings, **chosen})
        show_progress = progress and console.is_terminal
        outcome = run_suite(suite, config, db_url=db_url, console=console, show_progress=show_progress)
        run = RunResults(meta=outcome.meta, rows=outcome.rows)
        transcripts = outcome.results_path.parent / TRANSCRIPTS_FILE
        # a pricing file may be bad
        files = write_reports(run, outcome.results_path.parent, pricing=pricing, transcripts=transcripts)
    if out.resolve().parent == REPORTS_DIR.resolve():
        point_latest(out)
    print_summary(console, files.summary, run.meta, run)
    fail_if_no_model_answered(console, run)  # before any README block is written
    if readme is not None:
        write_readme(console, run, files.summary, readme)
    console.print(
        f"{outcome.units_run} units run, {outcome.units_skipped} resumed, in {outcome.elapsed_s:.1f} s · "
        f"{outcome.results_path} · {files.markdown} · {files.html} · {files.turns}"
    )
    if fail_under is not None:
        threshold = fail_under / 100 if fail_under > 1 else fail_under
        below = [
            f"{name} · {m.mode}" if name is not None else m.mode
            for name, m in files.summary.cells()
            if m.accuracy < threshold
        ]
        if below:
            console.print(f"[red]accuracy below {threshold:.0%}:[/red] {', '.join(below)}")
            raise typer.Exit(code=1)


_UNREACHED: frozenset[str] = frozenset({"provider", "timeout"})
"""Failure kinds of a turn that got no reply from the model."""


def fail_if_no_model_answered(console: Console, run: RunResults) -> None:
    """Say so and exit 1 when no turn of ``run`` got a reply from its model: no figure of it is a model's."""
    unreached = _no_model_answered(run)
    if unreached is not None:
        console.print(f"[red]{escape(unreached)}[/red]")
        raise typer.Exit(code=1)


def _no_model_answered(run: RunResults) -> str | None:
    """Why none of the run's turns got a reply from its model (each failed ``provider`` or ``timeout``), or
    ``None`` when at least one did."""
    rows = run.scored_rows
    if not rows or any(row.failure not in _UNREACHED for row in rows):
        return None
    first = next((line for row in rows for line in row.errors), "no error recorded")
    return (
        f"No model answered any of the {len(rows)} turns: each failed with provider or timeout (first: "
        f"{first}). Check --base-url, that the model server is running and serves --model, and --timeout."
    )


_TOOL_CALLING_OPTIONS = {"structured": "--structured", "tool_call_recovery": "--no-tool-call-recovery"}


def _check_tool_calling_options(ctx: typer.Context, modes: Sequence[str]) -> None:
    """A tool-calling option on a run without a tool-calling mode (or a planner option on a run without the
    planner) would be silently ignored: refuse it."""
    if "planner" not in modes and given(ctx, "plan_schema"):
        raise ConfigurationError(
            f"--plan-schema applies to the planner only, and --modes {','.join(modes)} does not run it."
        )
    if any(mode.startswith("toolcalling") for mode in modes):
        return
    for name, flag in _TOOL_CALLING_OPTIONS.items():
        if given(ctx, name):
            raise ConfigurationError(
                f"{flag} applies to tool calling only, and --modes {','.join(modes)} runs none of its modes."
            )


def _targets(
    specs: list[str],
    targets_file: Path | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
) -> list[BenchTarget]:
    """The run's targets from ``--targets-file`` then ``--target``; neither goes with ``--provider``,
    ``--model`` or ``--base-url``."""
    if not specs and targets_file is None:
        return []
    options = {"--provider": provider, "--model": model, "--base-url": base_url}
    used = [name for name, value in options.items() if value is not None]
    if used:
        raise ConfigurationError(
            f"{' and '.join(used)} cannot be combined with --target/--targets-file: put the model in each "
            f"target ({TARGET_SYNTAX}), e.g. --target a=ollama:llama3.1:8b@http://127.0.0.1:11434."
        )
    from_file = load_targets_file(targets_file) if targets_file is not None else []
    return unique_targets([*from_file, *parse_targets(specs)])


def read_run(console: Console, results: Path) -> RunResults:
    """The results file ``results``; exit 2 when it is missing or cannot be read."""
    if not results.exists():
        raise bench_error(console, f"{results} does not exist")
    try:
        return read_results(results)
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8, or a line that is not a record
        raise bench_error(console, f"cannot read {results}: {exc}") from None


def rescore_recorded(
    run: RunResults, scenarios: Sequence[Path] | None = None, db_url: str | None = None
) -> tuple[RunResults, RescoreSummary]:
    """``run`` scored by today's scorer against ``scenarios`` (default: those its run line names, else the
    packaged suite) on the ERP at ``db_url`` (default: the demo ERP).

    Raises:
        ScenarioError, ScenarioNotFound: the scenario files cannot be read or lack one of the run's turns.
        ErpAiError: the ERP cannot be opened.
    """
    paths = list(scenarios or []) or [Path(path) for path in run.meta.scenario_paths] or None
    erp = open_erp(db_url)
    try:
        return rescore(run, load_scenarios(paths), sales_registry(), erp)
    finally:
        erp.engine.dispose()


def write_readme(console: Console, run: RunResults, summary: Summary, readme: Path) -> None:
    with refused(console, (OSError, ValueError)):
        update_readme(readme, block_name(run), readme_block(run, summary))
    console.print(f"benchmark figures written to {readme}")
