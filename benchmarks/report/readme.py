"""The benchmark figures of ``README.md``, written by code from a results file (never typed by hand).

``erp-ai report RESULTS --readme README.md`` replaces what stands between a pair of markers. A real-model run
writes the ``real-model`` block (:mod:`benchmarks.report.readme_real`: per-mode figures, the paired test,
coverage, the scorer check and the command that reproduces it); an offline run writes, after its first
line, the summary table (total latency and time to the first answer token, each measured and, under a
latency profile, simulated), what those columns are, the computed findings and a line saying how and when
the figures were measured. Each latency profile has its own block (``measured`` for runs without one;
``<name>-no-prompt-cache`` for a run without the modelled prefix cache), so a README can show several runs
side by side::

    <!-- BENCH-FIGURES:gpu-8b:START … -->
    <!-- BENCH-FIGURES:gpu-8b:END -->
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.report.about import prefix_cache_text, targets_text
from benchmarks.report.aggregate import Summary
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline
from benchmarks.report.markdown import render_table
from benchmarks.report.readme_real import REAL_MODEL_BLOCK, real_model_block
from benchmarks.report.regime import first_line
from benchmarks.report.tables import LATENCY_CAPTION, summary_rows
from benchmarks.results import RunResults


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
    commit = meta.provenance.git_commit if meta.provenance is not None else None
    code = ""
    if commit is not None and meta.provenance is not None:
        code = f", code at commit `{commit[:12]}`" + (
            " with uncommitted changes" if meta.provenance.git_dirty else ""
        )
    cache = prefix_cache_text(meta)
    who = (
        f"targets {targets_text(meta)}"
        if meta.matrix
        else f"provider `{meta.provider}`" + (f", model `{meta.model}`" if meta.model else "")
    )
    source = (
        f"Measured by `erp-ai bench` on {meta.started_at[:10]} with {who}"
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
        return "\n".join(
            [start_marker(name), "", source, "", *real_model_block(results, summary), "", end_marker(name)]
        )
    lines = [start_marker(name), "", f"**{first_line(meta)}**", "", source, ""]
    top = headline(summary)
    if top:
        lines += [f"**{top}**", ""]
    lines += render_table(*summary_rows(summary))
    lines += ["", LATENCY_CAPTION, ""]
    lines += [f"- {sentence}" for sentence in findings(summary, None)]
    if meta.offline:
        lines += ["", f"*{OFFLINE_NOTICE}*"]
    lines += ["", end_marker(name)]
    return "\n".join(lines)


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
