"""Reports from a results file: terminal table, ``report.md``, a self-contained ``report.html`` and the turn
table as ``turns.csv``; of two runs, the combined report adds what changed from the first to the second."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.compare import Comparison
from benchmarks.report.aggregate import summarize
from benchmarks.report.comparison import render_comparison_html, render_comparison_markdown
from benchmarks.report.findings import OFFLINE_NOTICE, findings
from benchmarks.report.html import render_combined_html, render_html
from benchmarks.report.html_parts import failed_turn_keys
from benchmarks.report.markdown import render_combined_markdown, render_markdown
from benchmarks.report.runs import ReportRun, combined_runs, report_run, summarize_run
from benchmarks.report.summary import Summary
from benchmarks.report.terminal import print_combined, print_summary
from benchmarks.report.turns_csv import TURNS_CSV, render_turns_csv
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
    "render_comparison_html",
    "render_comparison_markdown",
    "render_html",
    "render_markdown",
    "summarize",
    "summarize_run",
    "write_combined_reports",
    "write_reports",
]


def _write(out_dir: Path, markdown: str, html: str, turns: str) -> tuple[Path, Path, Path]:
    """Write ``report.md``, ``report.html`` and ``turns.csv`` into ``out_dir``; return their paths. None is
    written when one of them is a symbolic link (:func:`write_whole`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = out_dir / "report.md", out_dir / "report.html", out_dir / TURNS_CSV
    for path in paths:
        _not_a_link(path)
    for path, text in zip(paths, (markdown, html, turns), strict=True):
        write_whole(path, text)
    return paths


def _not_a_link(path: Path) -> None:
    if path.is_symlink():
        raise ConfigurationError(f"{path} is a symbolic link: reports are never written through one")


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a failed write leaves the previous file as it was),
    never through a symbolic link; the file is readable as any file the user writes (the temporary file it
    starts as is private to its owner).

    Raises:
        ConfigurationError: ``path`` is a symbolic link.
    """
    _not_a_link(path)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, suffix=".tmp", delete=False
    ) as tmp:
        try:
            tmp.write(text)
            os.chmod(tmp.name, _file_mode())
        except BaseException:
            tmp.close()
            Path(tmp.name).unlink(missing_ok=True)
            raise
    os.replace(tmp.name, path)


@functools.cache
def _file_mode() -> int:
    """The mode ``open()`` gives a new file under the process's umask, read on the first report written."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_combined_reports(
    runs: Sequence[ReportRun], out_dir: Path, *, comparison: Comparison | None = None
) -> tuple[Path, Path, Path]:
    """Write the reports of several runs side by side into ``out_dir``; return their paths (md, html, csv).

    ``comparison``: what changed from the first run to the second (two runs), a section of both reports.
    """
    markdown = render_comparison_markdown(comparison) if comparison is not None else None
    html = render_comparison_html(comparison) if comparison is not None else None
    return _write(
        out_dir,
        render_combined_markdown(runs, comparison=markdown),
        render_combined_html(runs, comparison=html),
        render_turns_csv([(run.label, run.results) for run in runs]),
    )


@dataclass(frozen=True)
class ReportFiles:
    """Where the reports were written, and the figures they show."""

    markdown: Path
    html: Path
    turns: Path
    """``turns.csv``: one row per recorded turn."""
    summary: Summary


def write_reports(
    results: RunResults | Path,
    out_dir: Path | None = None,
    *,
    pricing: Path | None = None,
    transcripts: Path | None = None,
) -> ReportFiles:
    """Write ``report.md``, ``report.html`` and ``turns.csv`` next to the results file (or into ``out_dir``).

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
    html = render_html(results, run.summary, run.costs, transcripts=calls)
    paths = _write(target, markdown, html, render_turns_csv([(None, results)]))
    return ReportFiles(*paths, summary=run.summary)
