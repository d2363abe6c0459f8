"""The benchmark figures of ``README.md``, written by code from a results file (never typed by hand).

``erp-ai report RESULTS --readme README.md`` replaces what stands between a pair of markers. A real-model run
writes the ``real-model`` block: per-mode figures, the verdict and paired test, which scenario categories the
run covered, the scorer check and the ``erp-ai bench`` command that reproduces it. An offline run writes,
after its first line, the summary table, what its latency columns are, the computed findings and a line
saying how and when the figures were measured. Each latency profile has its own block (``measured`` for runs
without one; ``<name>-no-prompt-cache`` for a run without the modelled prefix cache), so a README can show
several runs side by side::

    <!-- BENCH-FIGURES:gpu-8b:START … -->
    <!-- BENCH-FIGURES:gpu-8b:END -->
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from benchmarks.report.calibration import agreement_line
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline
from benchmarks.report.markdown import markdown_safe, render_table
from benchmarks.report.run_facts import prefix_cache_text, who_ran
from benchmarks.report.runs import first_line, regime_of
from benchmarks.report.splits import SPLITS_CAPTION, decision, split_lines, split_table
from benchmarks.report.summary import Summary, tokens_text
from benchmarks.report.tables import (
    LATENCY_CAPTION,
    NOT_RECORDED,
    Column,
    Table,
    accuracy_cell,
    mode_table,
    summary_rows,
)
from benchmarks.report.time_breakdown import BREAKDOWN_CAPTION, CALLS_CAPTION, breakdown_table, calls_table
from benchmarks.report.verdict import accuracy_edge
from benchmarks.report.verdict_table import failures_cell, first_answer_cell, latency_cell, tokens_cell
from benchmarks.results import RunMeta, RunResults, TurnRow
from benchmarks.scenario import Scenario, load_scenarios


@dataclass(frozen=True)
class CategoryCoverage:
    """One category: the suite's turns of it, and how many of them the run has (in its best-covered mode)."""

    category: str
    run_turns: int
    suite_turns: int


def category_coverage(rows: Sequence[TurnRow], suite: Sequence[Scenario]) -> list[CategoryCoverage]:
    """Every category of the suite or the rows, in name order. A turn counts once (scenario and turn),
    whatever its repetitions; the run's count is its best-covered mode's."""
    suite_turns: dict[str, int] = defaultdict(int)
    for scenario in suite:
        suite_turns[scenario.category] += len(scenario.turns)
    seen: dict[tuple[str, str], set[tuple[str, int]]] = defaultdict(set)
    for row in rows:
        if not row.warmup:
            seen[(row.category, f"{row.target}/{row.mode}")].add((row.scenario, row.turn))
    run_turns: dict[str, int] = defaultdict(int)
    for (category, _), turns in seen.items():
        run_turns[category] = max(run_turns[category], len(turns))
    return [
        CategoryCoverage(category, run_turns.get(category, 0), suite_turns.get(category, 0))
        for category in sorted(set(suite_turns) | set(run_turns))
    ]


def coverage_text(rows: Sequence[TurnRow], suite: Sequence[Scenario]) -> str:
    """``"Scenario categories covered (turns run of the packaged scenarios', …): articulo 5/5, …; not covered:
    none."``"""
    found = category_coverage(rows, suite)
    covered = [c for c in found if c.run_turns]
    missing = [c.category for c in found if not c.run_turns]
    ran = ", ".join(f"{c.category} {c.run_turns}/{c.suite_turns}" for c in covered) or "none"
    absent = ", ".join(missing) if missing else "none (every category of the packaged scenarios ran)"
    return (
        "Scenario categories covered (turns run of the packaged scenarios', tuning suite and held-out "
        f"questions together): {ran}; not covered: {absent}."
    )


LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts of a local OpenAI-compatible server, which accepts any API key."""


def _flag(name: str, value: object) -> list[str]:
    return [name, str(value)]


def bench_arguments(meta: RunMeta) -> list[str]:
    """The ``erp-ai bench`` arguments of the run, each option only where it differs from the default or
    bounds the run (``--max-tokens``, ``--timeout``)."""
    args = ["erp-ai", "bench"]
    if meta.targets:
        for target in meta.targets:
            args += _flag("--target", target.spec)
    else:
        args += _flag("--provider", meta.provider)
        args += _flag("--model", meta.model) if meta.model else []
        args += _flag("--base-url", meta.base_url) if meta.base_url else []
    args += _flag("--modes", ",".join(meta.modes)) if meta.modes else []
    for path in meta.scenario_paths:
        args += _flag("--scenarios", path)
    for tag in meta.tags:
        args += _flag("--tag", tag)
    args += _flag("--repeat", meta.repeat) if meta.repeat != 1 else []
    args += _flag("--warmup", meta.warmup) if meta.warmup else []
    args += _flag("--concurrency", meta.concurrency) if meta.concurrency != 1 else []
    args += _flag("--latency-profile", meta.latency_profile) if meta.latency_profile else []
    args += ["--structured"] if meta.structured else []
    args += _flag("--plan-schema", meta.plan_schema) if meta.plan_schema != "union" else []
    args += [] if meta.tool_call_recovery else ["--no-tool-call-recovery"]
    args += ["--no-prompt-cache"] if meta.any_offline and meta.prompt_cache is False else []
    args += _flag("--max-tokens", meta.max_tokens) if meta.max_tokens is not None else []
    args += _flag("--timeout", f"{meta.timeout:g}") if meta.timeout is not None else []
    return args


def _environment(meta: RunMeta) -> str:
    """``OPENAI_API_KEY=unused `` for a local OpenAI-compatible server (any key works), else nothing."""
    urls = [t.base_url for t in meta.targets if t.provider == "openai"] if meta.targets else []
    if not meta.targets and meta.provider == "openai":
        urls = [meta.base_url]
    if urls and all(url and urlparse(url).hostname in LOCAL_HOSTS for url in urls):
        return "OPENAI_API_KEY=unused "
    return ""


def bench_command(meta: RunMeta) -> str:
    """The shell command that runs the same benchmark again."""
    return _environment(meta) + shlex.join(bench_arguments(meta))


def reproduce_text(meta: RunMeta) -> str:
    """Where to run :func:`bench_command` from: the recorded commit (and whether it had local changes)."""
    provenance = meta.provenance
    if provenance is None or provenance.git_commit is None:
        return "From a checkout of the code the run used (its commit was not recorded):"
    dirty = " (the run had uncommitted changes on top of it)" if provenance.git_dirty else ""
    return f"From a checkout at commit `{provenance.git_commit[:12]}`{dirty}:"


REAL_MODEL_BLOCK = "real-model"
"""The README block every run with a real provider writes to."""

COLUMNS_CAPTION = (
    "Per turn, measured on the run's machine. Accuracy: share of turns passed (Wilson 95% interval). "
    "Cached: share of input tokens the provider's prompt cache served. First answer: time from the turn's "
    "start to the first answer token. Ungrounded: turns whose answer stated a figure no ERP result "
    "supported (n/a: the run predates the check). Claimed actions: turns whose answer said the ERP did "
    "something no operation did (sent, changed, deleted, registered, executed), refused like an ungrounded "
    "figure. Recovered: tool calls the model wrote as text that tool "
    "calling turned into real calls."
)


def real_model_rows(results: RunResults, summary: Summary) -> Table:
    """The per-mode table of the block (a ``target`` column first for a matrix)."""
    regime = regime_of(results.meta)
    columns: list[Column] = [
        ("turns", lambda m: str(m.turns)),
        ("accuracy (95% CI)", accuracy_cell),
        ("calls/turn", lambda m: f"{m.calls_mean:.2f}"),
        ("tokens in / out", tokens_cell),
        ("cached", lambda m: "–" if m.cached_share is None else tokens_text(m, m.cached_share, ".0%")),
        ("latency p50 / p95 ms", lambda m: latency_cell(m, regime)),
        ("first answer p50 / p95 ms", lambda m: first_answer_cell(m, regime)),
        ("ungrounded", lambda m: NOT_RECORDED if m.ungrounded_turns is None else str(m.ungrounded_turns)),
        (
            "claimed actions",
            lambda m: NOT_RECORDED if m.claimed_action_turns is None else str(m.claimed_action_turns),
        ),
        ("recovered", lambda m: str(m.recovered_tool_calls) if m.mode.startswith("toolcalling") else "–"),
        ("failed (kinds)", failures_cell),
    ]
    return mode_table(summary, columns)


def paired_lines(summary: Summary) -> list[str]:
    """The paired accuracy test of every mode against the base mode (per target for a matrix)."""
    entries = [(f"Target {t.target.name}: ", t.summary) for t in summary.targets] or [("", summary)]
    return [f"- {prefix}{accuracy_edge(p).detail}" for prefix, part in entries for p in part.paired]


def real_model_block(
    results: RunResults, summary: Summary, suite: Sequence[Scenario] | None = None
) -> list[str]:
    """The block's lines between its markers (``suite``: the packaged scenarios, for the coverage line)."""
    meta = results.meta
    verdict = decision(results, summary, regime_of(meta), meta.model)
    lines = [f"**{first_line(meta)}**", ""]
    lines += render_table(*real_model_rows(results, summary))
    lines += ["", COLUMNS_CAPTION, ""]
    splits = split_table(results)
    if splits is not None:
        lines += [*render_table(*splits), "", SPLITS_CAPTION, ""]
    lines += [f"- **{sentence}**" for sentence in verdict.leads]
    lines += (
        [*split_lines(results, "heldout"), *split_lines(results, "suite")]
        if splits
        else paired_lines(summary)
    )
    breakdown, calls = breakdown_table(results.rows), calls_table(results.rows)
    if breakdown is not None and calls is not None:  # where each mode's time goes, per turn and per call
        lines += [
            "",
            *render_table(*breakdown),
            "",
            BREAKDOWN_CAPTION,
            "",
            *render_table(*calls),
            "",
            CALLS_CAPTION,
        ]
    lines += [
        "",
        coverage_text(results.scored_rows, load_scenarios() if suite is None else suite),
        "",
        agreement_line(),
        "",
        f"Reproduce it. {reproduce_text(meta)}",
        "",
        "```bash",
        bench_command(meta),
        "```",
    ]
    return lines


def block_name(results: RunResults) -> str:
    """The README block a run writes to: ``real-model`` when a real provider answered; else its latency
    profile, or ``measured`` without one; a run without the offline model's prefix cache
    (``--no-prompt-cache``) gets its own block, ``<name>-no-prompt-cache``."""
    if not results.meta.offline:
        return REAL_MODEL_BLOCK
    name = results.meta.latency_profile or "measured"
    return f"{name}-no-prompt-cache" if results.meta.prompt_cache is False else name


def start_marker(name: str, writer: str = "erp-ai report … --readme README.md") -> str:
    return f"<!-- BENCH-FIGURES:{name}:START (written by `{writer}`; do not edit) -->"


def end_marker(name: str) -> str:
    return f"<!-- BENCH-FIGURES:{name}:END -->"


def readme_block(results: RunResults, summary: Summary) -> str:
    """The Markdown that goes between the markers."""
    meta = results.meta
    provenance, code = meta.provenance, ""
    if provenance is not None and provenance.git_commit is not None:
        dirty = " with uncommitted changes" if provenance.git_dirty else ""
        code = f", code at commit `{provenance.git_commit[:12]}`{dirty}"
    cache = prefix_cache_text(meta)
    source = (
        f"Measured by `erp-ai bench` on {meta.started_at[:10]} with {who_ran(meta)}"
        + (f", latency profile `{meta.latency_profile}`" if meta.latency_profile else ", no latency profile")
        + (f", {cache}" if cache else "")
        + f": {meta.scenarios} scenarios, {meta.turns} turns per "
        + ("target and mode" if meta.matrix else "mode")
        + f", {meta.repeat} repetition(s)"
        + (
            f" after {summary.warmup_turns} warm-up turn(s) left out of the figures"
            if summary.warmup_turns
            else ""
        )
        + ", "
        + (f"on {meta.host}" if meta.host else "on an unrecorded machine")
        + f"{code}."
    )
    name = block_name(results)
    if name == REAL_MODEL_BLOCK:
        body = ["", source, "", *real_model_block(results, summary), ""]
        return "\n".join([start_marker(name), *map(markdown_safe, body), end_marker(name)])
    lines = ["", f"**{first_line(meta)}**", "", source, ""]
    top = headline(summary)
    if top:
        lines += [f"**{top}**", ""]
    lines += render_table(*summary_rows(summary))
    lines += ["", LATENCY_CAPTION, ""]
    lines += [f"- {sentence}" for sentence in findings(summary, None, targets=meta.offline)]
    if meta.offline:
        lines += ["", f"*{OFFLINE_NOTICE}*"]
    return "\n".join([start_marker(name), *map(markdown_safe, [*lines, ""]), end_marker(name)])


def update_readme(path: Path, name: str, block: str) -> None:
    """Replace block ``name`` of ``path`` (which must already hold both of its markers) with ``block``."""
    text = path.read_text(encoding="utf-8")
    start_line, end_line = start_marker(name), end_marker(name)
    start, end = text.find(start_line.split(" (")[0]), text.find(end_line)
    if start < 0 or end < start:
        raise ValueError(
            f"{path} has no {name!r} benchmark-figures block: add the lines {start_line!r} and {end_line!r}."
        )
    path.write_text(text[:start] + block + text[end + len(end_line) :], encoding="utf-8")
