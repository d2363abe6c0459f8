"""``report.md``: the summary, per-category accuracy, pass^k, the growth curve's ends and the findings."""

from __future__ import annotations

from benchmarks.report.aggregate import Summary
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline
from benchmarks.results import RunResults
from shared.failures import FAILURE_KINDS


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
    return head.rstrip(" ;,") + "…"


def render_table(header: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """A Markdown table; ``align`` has one ``l``/``r`` per column (default: the first left, figures right)."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = "|" + "|".join("--:" if a == "r" else "---" for a in align) + "|"
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", rule]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
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


def failure_rows(summary: Summary) -> tuple[list[str], list[list[str]]] | None:
    """Failed turns per failure kind (rows) and mode (columns); ``None`` when no turn failed."""
    kinds = [kind for kind in FAILURE_KINDS if any(kind in m.failures for m in summary.modes)]
    if not kinds:
        return None
    header = ["failure kind", *(m.mode for m in summary.modes)]
    rows = [[kind, *(str(m.failures.get(kind, 0)) for m in summary.modes)] for kind in kinds]
    return header, rows


def pass_k_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """pass^1 … pass^k per mode."""
    ks = list(range(1, summary.repetitions + 1))
    header = ["mode", *(f"pass^{k}" for k in ks)]
    rows = [[m.mode, *(f"{m.pass_k[k]:.1%}" if k in m.pass_k else "–" for k in ks)] for m in summary.modes]
    return header, rows


def _failing_turns(results: RunResults, limit: int = 50) -> list[str]:
    """Failing turns, one row per (scenario, turn, repetition, reason) naming every mode that failed so."""
    groups: dict[tuple[str, int, int, str], list[str]] = {}
    scenario_order: dict[str, int] = {}
    for r in results.rows:
        scenario_order.setdefault(r.scenario, len(scenario_order))
        if not r.passed:
            why = "; ".join(r.score.details or r.errors) or "failed"
            if r.failure is not None:
                why = f"[{r.failure}] {why}"
            groups.setdefault((r.scenario, r.turn, r.repetition, why), []).append(r.mode)
    if not groups:
        return []
    ordered = sorted(groups.items(), key=lambda kv: (scenario_order[kv[0][0]], kv[0][2], kv[0][1]))
    shown = ordered[:limit]
    every = set(results.meta.modes or {r.mode for r in results.rows})

    def who(modes: list[str]) -> str:
        return "all modes" if len(every) > 1 and set(modes) >= every else ", ".join(modes)

    lines = ["", "## Failing turns", ""]
    lines += render_table(
        ["mode", "scenario", "turn", "rep", "why"],
        [[who(modes), s, str(t), str(rep), clip(why, 200)] for (s, t, rep, why), modes in shown],
        align="llrrl",
    )
    if len(groups) > len(shown):
        lines += ["", f"… and {len(groups) - len(shown)} more (see report.html)."]
    return lines


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
    lines += ["## Findings", ""]
    top = headline(summary)
    if top:
        lines += [f"**{top}**", ""]
    lines += [f"- {sentence}" for sentence in findings(summary, None)]
    lines += ["", "## Summary", ""]
    lines += render_table(*summary_rows(summary))
    lines += ["", "Latency is measured model time plus harness time; simulated adds the latency profile.", ""]
    failures = failure_rows(summary)
    if failures is not None:
        lines += ["## Failures per kind", ""]
        lines += render_table(*failures)
        lines += ["", "Kinds as defined in `docs/failures.md`; a failed turn never passes.", ""]
    lines += ["## Accuracy per category", ""]
    lines += render_table(*category_rows(summary))
    lines += ["", "## pass^k (tau-bench)", ""]
    lines += render_table(*pass_k_rows(summary))
    if summary.growth is not None:
        lines += ["", f"## Context growth on `{summary.growth.scenario}`", ""]
        header = ["mode", "input tokens turn 1", "input tokens last turn", "ratio"]
        rows = []
        series = summary.growth.series
        order = [m.mode for m in summary.modes if m.mode in series]
        for mode in order + [m for m in series if m not in order]:
            values = series[mode]
            ratio = summary.growth.ratio(mode)
            rows.append(
                [mode, f"{values[0]:.0f}", f"{values[-1]:.0f}", "–" if ratio is None else f"×{ratio:.2f}"]
            )
        lines += render_table(header, rows)
    lines += _failing_turns(results)
    return "\n".join(lines) + "\n"
