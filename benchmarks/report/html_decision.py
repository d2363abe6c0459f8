"""The records of the sections every ``report.html`` opens with, of one run or of several side by side: the
regime, the verdict (a table with a row per run, target and mode, then each run's sentences), results per
category and the failures with one example of each kind, each figure linked to its turns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchmarks.report.calibration import agreement_line
from benchmarks.report.failure_groups import KIND_ORDER, FailureGroup, example_text, failure_groups
from benchmarks.report.html_parts import (
    Cell,
    Grid,
    Link,
    Row,
    category_anchor,
    cell_anchor,
    filter_anchor,
    plain,
    slug,
    turn_columns,
)
from benchmarks.report.run_facts import mode_description
from benchmarks.report.runs import ReportRun, category_grid, first_line, regimes_rows
from benchmarks.report.splits import decision, split_table
from benchmarks.report.summary import CategorySummary
from benchmarks.report.tables import percent_interval
from benchmarks.report.verdict import Verdict
from benchmarks.report.verdict_table import (
    VerdictLine,
    verdict_cells,
    verdict_header,
    verdict_lines,
    verdict_title,
)

Colours = Mapping[str, str]


@dataclass(frozen=True)
class Banner:
    """A run's first line, set apart: amber for a structure run, blue for a real model."""

    css: str
    """``structure`` or ``real``."""
    regime: str
    text: str
    label: str = ""
    """The run's label, on a page of several runs."""
    ident: str = ""


def banner(run: ReportRun, *, labeled: bool = False, anchored: bool = True) -> Banner:
    """``anchored`` gives the banner the id ``<prefix>regime`` (once per run on a page)."""
    return Banner(
        "structure" if run.regime.structure_only else "real",
        run.regime.kind,
        first_line(run.results.meta),
        run.label if labeled else "",
        f"{run.anchor}regime" if anchored else "",
    )


def regimes_grid(runs: Sequence[ReportRun]) -> Grid:
    """One row per run of a combined report: its label, regime, provider, model, clock, prefix cache, size."""
    header, rows = regimes_rows(runs)
    return plain((header, rows), "regimes", labels=len(header))


def _column(run: ReportRun, line: VerdictLine) -> int | None:
    """The index of ``line``'s (target, mode) in the run's turn-by-turn table."""
    columns = enumerate(turn_columns(run.results, run.summary))
    return next((i for i, (t, m) in columns if m == line.mode.mode and line.target in (None, t)), None)


def _verdict_cell(run: ReportRun, line: VerdictLine, name: str, text: str, colours: Colours) -> Cell:
    """One cell of the verdict table: accuracy and failures as a figure over a small second line, linked to
    the turns they count."""
    mode = line.mode
    if name in ("mode", "run", "target"):
        return Cell(
            text,
            figure=False,
            swatch=colours.get(text) if name == "mode" else None,
            href=f"{run.anchor}run" if name == "run" else "",
        )
    main, _, rest = text.partition(" (")
    note = rest.removesuffix(")")
    if name.startswith("accuracy") and not line.regime.structure_only:
        column = _column(run, line)
        failed = column is not None and mode.turns > mode.passed
        href = filter_anchor(f"fail-c{column}", run.anchor) if failed else ""
        return Cell(
            main, href=href, title="the turns it did not pass" if href else "", note=note, strong=True
        )
    if name == "failed turns" and mode.failed_turns:
        return Cell(main, href=f"{run.anchor}failures", note=note)
    return Cell(text)


def verdict_grid(runs: Sequence[ReportRun], colours: Colours) -> Grid:
    per_run = [(run, verdict_lines(run.label, run.summary, run.regime)) for run in runs]
    header = verdict_header([line for _, lines in per_run for line in lines])
    head = [Cell(h, figure=h not in ("run", "target", "mode")) for h in header]
    rows = [
        Row(
            [
                _verdict_cell(run, line, name, text, colours)
                for name, text in zip(header, verdict_cells(line, header), strict=True)
            ],
            css="run-start" if n == 0 and len(runs) > 1 else "",
            run=run.label,
        )
        for run, lines in per_run
        for n, line in enumerate(lines)
    ]
    return Grid("decision", head, rows, "verdict-table")


@dataclass(frozen=True)
class Statements:
    """One run's verdict in sentences (its leads, then the figures behind it) and the tuning suite against
    the held-out questions."""

    run: ReportRun
    verdict: Verdict
    splits: Grid | None


@dataclass(frozen=True)
class VerdictView:
    title: str
    table: Grid
    statements: list[Statements]
    calibration: str
    modes: list[tuple[str, str, str]]
    """(mode, colour, what it is) per mode."""


def verdict_view(runs: Sequence[ReportRun], colours: Colours) -> VerdictView:
    """The verdict: table, sentences per run, the scorer check and what each mode is."""
    statements = []
    for run in runs:
        verdict = decision(run.results, run.summary, run.regime, run.results.meta.model)
        splits = split_table(run.results) if not run.regime.structure_only else None
        statements.append(Statements(run, verdict, plain(splits, "splits") if splits is not None else None))
    modes = dict.fromkeys(m.mode for run in runs for _, m in run.summary.cells())
    return VerdictView(
        verdict_title(runs),
        verdict_grid(runs, colours),
        statements,
        agreement_line(),
        [(m, colours.get(m, "#999"), mode_description(m)) for m in modes],
    )


def _category_cell(run: ReportRun, found: CategorySummary | None) -> Cell:
    if found is None:
        return Cell("–")
    href = category_anchor(found.category, run.anchor)
    calls = f"{found.calls_mean:.1f} calls/turn"
    if run.regime.structure_only:
        return Cell(calls, href=href, note=f"{found.turns} turns")
    interval = percent_interval(found.accuracy_interval, 0)
    note = f"[{interval}] · {found.turns} turns · {calls}"
    return Cell(f"{found.accuracy:.0%}", href=href, note=note, tint=found.accuracy)


def categories_grid(runs: Sequence[ReportRun], colours: Colours) -> Grid:
    """Accuracy (or, for a structure run, calls) per category (rows) and (run, target, mode) (columns)."""
    labeled = len(runs) > 1
    columns, categories, found = category_grid(runs)
    head = [Cell("category", figure=False)] + [
        Cell(
            mode,
            swatch=colours.get(mode),
            lead=" · ".join(part for part in (run.label if labeled else "", target or "") if part),
        )
        for run, target, mode in columns
    ]
    rows = [
        Row(
            [Cell(category, figure=False)]
            + [_category_cell(run, found.get((i, category))) for i, (run, _, _) in enumerate(columns)]
        )
        for category in categories
    ]
    return Grid("categories", head, rows)


LINKS_SHOWN = 30
"""Turn links listed per kind (the rest are counted)."""


@dataclass(frozen=True)
class FailureExample:
    """One kind of failure of one (target, mode): one example and links to its turns."""

    group: FailureGroup
    ident: str
    target: str
    """The target's name in a matrix, else empty."""
    colour: str
    example: str
    links: list[Link]
    more: int
    """Turns of the kind not linked."""


@dataclass(frozen=True)
class RunFailures:
    label: str
    """The run's label, on a page of several runs."""
    ident: str
    table: Grid | None
    """``None`` when every turn passed."""
    examples: list[FailureExample]


def _group_anchor(run: ReportRun, group: FailureGroup) -> str:
    return f"{run.anchor}failure-{slug(group.target)}-{slug(group.mode)}-{slug(group.kind)}"


def _failures_grid(run: ReportRun, groups: Sequence[FailureGroup], colours: Colours) -> Grid:
    matrix = run.summary.matrix
    columns = list(dict.fromkeys((g.target, g.mode) for g in groups))
    by_key = {(g.target, g.mode, g.kind): g for g in groups}
    head = [Cell("kind", figure=False)] + [
        Cell(mode, swatch=colours.get(mode), lead=target if matrix else "") for target, mode in columns
    ]
    rows = []
    for kind in sorted({g.kind for g in groups}, key=KIND_ORDER.index):
        found = [by_key.get((target, mode, kind)) for target, mode in columns]
        rows.append(
            Row(
                [Cell(kind, figure=False)]
                + [
                    Cell("0") if g is None else Cell(str(len(g.turns)), href=_group_anchor(run, g))
                    for g in found
                ]
            )
        )
    return Grid("failures", head, rows)


def _example(run: ReportRun, group: FailureGroup, colours: Colours) -> FailureExample:
    columns = turn_columns(run.results, run.summary)
    key = (group.target, group.mode)
    index = columns.index(key) if key in columns else None
    shown = [row for row in group.turns if row.repetition == 1][:LINKS_SHOWN] if index is not None else []
    links = [
        Link(cell_anchor(r.scenario, r.turn, index, run.anchor), f"{r.scenario} · {r.turn}")
        for r in shown
        if index is not None
    ]
    return FailureExample(
        group,
        _group_anchor(run, group),
        group.target if run.summary.matrix else "",
        colours.get(group.mode, "#999"),
        example_text(group.example),
        links,
        len(group.turns) - len(links) if links else 0,
    )


def run_failures(runs: Sequence[ReportRun], colours: Colours) -> list[RunFailures]:
    """Per run (labeled when there are several) the failures table and one example of each kind."""
    labeled = len(runs) > 1
    out = []
    for run in runs:
        groups = failure_groups(run.results.scored_rows)
        out.append(
            RunFailures(
                run.label if labeled else "",
                f"{run.anchor}failures" if labeled else "",
                _failures_grid(run, groups, colours) if groups else None,
                [_example(run, group, colours) for group in groups],
            )
        )
    return out
