"""``report.md``: the summary, per-category accuracy, pass^k, the growth curve's ends and the findings."""

from __future__ import annotations

from benchmarks.report.aggregate import Summary
from benchmarks.report.findings import OFFLINE_NOTICE, findings
from benchmarks.results import RunResults


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def summary_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """The per-mode summary table, shared by the Markdown and HTML reports."""
    header = [
        "mode",
        "turns",
        "accuracy",
        "calls/turn (mean / max)",
        "input tok/turn",
        "output tok/turn",
        "latency p50 / p95 ms",
        "simulated p50 / p95 ms",
        "harness p50 / p95 ms",
        "failed",
    ]
    rows = [
        [
            m.mode,
            str(m.turns),
            f"{m.accuracy:.1%}",
            f"{m.calls_mean:.2f} / {m.calls_max}",
            f"{m.input_tokens_mean:.0f}",
            f"{m.output_tokens_mean:.0f}",
            f"{_ms(m.latency_p50)} / {_ms(m.latency_p95)}",
            f"{_ms(m.simulated_p50)} / {_ms(m.simulated_p95)}",
            f"{m.harness_p50:.2f} / {m.harness_p95:.2f}",
            str(m.failed_turns),
        ]
        for m in summary.modes
    ]
    return header, rows


def category_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Accuracy per category (rows) and mode (columns)."""
    modes = [m.mode for m in summary.modes]
    cells: dict[str, dict[str, str]] = {}
    for c in summary.categories:
        cells.setdefault(c.category, {})[c.mode] = f"{c.accuracy:.0%} ({c.turns})"
    header = ["category", *modes]
    rows = [[category, *(per.get(mode, "–") for mode in modes)] for category, per in sorted(cells.items())]
    return header, rows


def pass_k_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """pass^1 … pass^k per mode."""
    ks = list(range(1, summary.repetitions + 1))
    header = ["mode", *(f"pass^{k}" for k in ks)]
    rows = [[m.mode, *(f"{m.pass_k[k]:.1%}" if k in m.pass_k else "–" for k in ks)] for m in summary.modes]
    return header, rows


def render_markdown(results: RunResults, summary: Summary) -> str:
    """The whole Markdown report."""
    meta = results.meta
    lines = [
        "# erp-ai-harness benchmark",
        "",
        f"Provider `{meta.provider}`"
        + (f", model `{meta.model}`" if meta.model else "")
        + (f", latency profile `{meta.latency_profile}`" if meta.latency_profile else "")
        + f"; {meta.scenarios} scenarios, {meta.turns} turns per mode, {meta.repeat} repetition(s); "
        f"started {meta.started_at}.",
        "",
    ]
    if meta.offline:
        lines += [f"> **Note.** {OFFLINE_NOTICE}", ""]
    lines += ["## Findings", "", " ".join(findings(summary, None)), "", "## Summary", ""]
    lines += _table(*summary_rows(summary))
    lines += ["", "Latency is measured model time plus harness time; simulated adds the latency profile.", ""]
    lines += ["## Accuracy per category", ""]
    lines += _table(*category_rows(summary))
    lines += ["", "## pass^k (tau-bench)", ""]
    lines += _table(*pass_k_rows(summary))
    if summary.growth is not None:
        lines += ["", f"## Context growth on `{summary.growth.scenario}`", ""]
        header = ["mode", "input tokens turn 1", "input tokens last turn", "ratio"]
        rows = []
        for mode, values in summary.growth.series.items():
            ratio = summary.growth.ratio(mode)
            rows.append(
                [mode, f"{values[0]:.0f}", f"{values[-1]:.0f}", "–" if ratio is None else f"×{ratio:.2f}"]
            )
        lines += _table(header, rows)
    failures = [row for row in results.rows if not row.passed]
    if failures:
        lines += ["", "## Failing turns", ""]
        shown = failures[:50]
        lines += _table(
            ["mode", "scenario", "turn", "rep", "why"],
            [
                [
                    r.mode,
                    r.scenario,
                    str(r.turn),
                    str(r.repetition),
                    "; ".join(r.score.details or r.errors)[:160],
                ]
                for r in shown
            ],
        )
        if len(failures) > len(shown):
            lines += ["", f"… and {len(failures) - len(shown)} more (see report.html)."]
    return "\n".join(lines) + "\n"
