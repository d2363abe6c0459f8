"""Reports from a results file: terminal table, ``report.md`` and a self-contained ``report.html``."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.report.aggregate import summarize
from benchmarks.report.findings import OFFLINE_NOTICE, findings
from benchmarks.report.html import render_combined_html, render_html
from benchmarks.report.html_parts import failed_turn_keys
from benchmarks.report.markdown import render_combined_markdown, render_markdown
from benchmarks.report.runs import ReportRun, combined_runs, report_run, summarize_run
from benchmarks.report.summary import Summary
from benchmarks.report.terminal import print_combined, print_summary
from benchmarks.results import RunResults, read_results
from benchmarks.transcripts import TRANSCRIPTS_FILE, read_transcripts
from shared.errors import ConfigurationError

__all__ = [
    "OFFLINE_NOTICE",
    "ReportFiles",
    "ReportRun",
    "Summary",
    "combined_runs",
    "findings",
    "print_combined",
    "print_summary",
    "render_combined_html",
    "render_combined_markdown",
    "render_html",
    "render_markdown",
    "summarize",
    "summarize_run",
    "write_combined_reports",
    "write_reports",
]


def _write(out_dir: Path, markdown: str, html: str) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = out_dir / "report.md", out_dir / "report.html"
    for path, text in zip(paths, (markdown, html), strict=True):
        write_whole(path, text)
    return paths


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a failed write leaves the previous file as it was),
    never through a symbolic link.

    Raises:
        ConfigurationError: ``path`` is a symbolic link.
    """
    if path.is_symlink():
        raise ConfigurationError(f"{path} is a symbolic link: reports are never written through one")
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, suffix=".tmp", delete=False
    ) as tmp:
        try:
            tmp.write(text)
        except BaseException:
            tmp.close()
            Path(tmp.name).unlink(missing_ok=True)
            raise
    os.replace(tmp.name, path)


def write_combined_reports(runs: Sequence[ReportRun], out_dir: Path) -> tuple[Path, Path]:
    """Write the reports of several runs side by side into ``out_dir``; return their paths (md, html)."""
    return _write(out_dir, render_combined_markdown(runs), render_combined_html(runs))


@dataclass(frozen=True)
class ReportFiles:
    """Where the reports were written, and the figures they show."""

    markdown: Path
    html: Path
    summary: Summary


def write_reports(
    results: RunResults | Path,
    out_dir: Path | None = None,
    *,
    pricing: Path | None = None,
    transcripts: Path | None = None,
) -> ReportFiles:
    """Write ``report.md`` and ``report.html`` next to the results file (or into ``out_dir``).

    ``pricing`` is a user pricing file whose entries replace the packaged ones (see :mod:`benchmarks.cost`).
    ``transcripts``: the run's ``transcripts.jsonl`` (default: beside a results file given as a path), whose
    calls of each failed turn the HTML folds into that turn's cell; a missing file shows none.
    """
    if isinstance(results, Path):
        target = out_dir or results.parent
        transcripts = transcripts or results.parent / TRANSCRIPTS_FILE
        results = read_results(results)
    else:
        target = out_dir or Path(".")
    target.mkdir(parents=True, exist_ok=True)
    run = report_run(results, pricing=pricing)
    markdown = render_markdown(results, run.summary, run.costs)
    calls = read_transcripts(transcripts, failed_turn_keys(results)) if transcripts is not None else None
    paths = _write(target, markdown, render_html(results, run.summary, run.costs, transcripts=calls))
    return ReportFiles(*paths, summary=run.summary)
