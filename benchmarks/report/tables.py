"""The tables and captions every report shares (``report.md``, ``report.html``, the README block): each
builder returns a header and rows of plain text cells, and each renderer only lays them out. Also what a
report says about the run itself (modes, prefix cache, targets, provenance) and its failed turns grouped by
kind, with one example of each.

A run with several targets (models) gets a ``target`` column in every per-mode table (:func:`per_target`) and
the model matrix (:func:`matrix_grids`: one grid per figure, targets as rows and modes as columns)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks.cost import CostEstimate
from benchmarks.report.summary import ModeSummary, Summary, tokens_text
from benchmarks.results import RunMeta, TurnRow
from benchmarks.stats import Interval
from shared.failures import FAILURE_KINDS

Table = tuple[list[str], list[list[str]]]
"""A table's header and rows."""


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
    return head.rstrip(" ;,") + "…"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def percent_interval(interval: Interval | None, decimals: int = 1) -> str:
    """``"95.8–99.9"``: an interval of a proportion in percent (no sign), or ``""``."""
    if interval is None:
        return ""
    return f"{interval.low * 100:.{decimals}f}–{interval.high * 100:.{decimals}f}"


def accuracy_cell(mode: ModeSummary) -> str:
    """``"99.2% (95.8–99.9)"``: accuracy and its Wilson 95% interval."""
    interval = percent_interval(mode.accuracy_interval)
    return f"{mode.accuracy:.1%}" + (f" ({interval})" if interval else "")


NOT_RECORDED = "n/a"
"""What a figure the rows do not carry shows (e.g. the valid-plan rate before the engines record it)."""


def valid_plan_cell(mode: ModeSummary) -> str:
    """``"98.5% (130/132)"``: the share of turns whose request for operations was valid, with its count;
    :data:`NOT_RECORDED` when no turn says."""
    rate = mode.valid_plan_rate
    if rate is None:
        return NOT_RECORDED
    return f"{rate:.1%} ({mode.plans_valid}/{mode.plans_checked})"


VALID_PLAN_CAPTION = (
    "Valid plans: turns whose request for operations was valid as written (planner: the plan parsed and "
    "passed validation; tool calling: every tool call named a known operation with valid arguments), out "
    f"of the turns whose engine recorded it ({NOT_RECORDED}: not recorded)."
)


def lead_header(summary: Summary) -> list[str]:
    """The columns naming a row of a per-mode table: ``mode``, or ``target`` and ``mode`` for a matrix."""
    return ["target", "mode"] if summary.matrix else ["mode"]


def _lead(target: str | None, mode: ModeSummary) -> list[str]:
    return [mode.mode] if target is None else [target, mode.mode]


def per_target(summary: Summary, table: Callable[[Summary], Table | None]) -> Table | None:
    """``table`` of a one-target summary; for a matrix, each target's table stacked with a ``target``
    column first (the header of the widest). ``None`` when no target has the table."""
    if not summary.matrix:
        return table(summary)
    header: list[str] = []
    rows: list[list[str]] = []
    for entry in summary.targets:
        found = table(entry.summary)
        if found is None:
            continue
        if len(found[0]) + 1 > len(header):
            header = ["target", *found[0]]
        rows += [[entry.target.name, *row] for row in found[1]]
    return (header, rows) if header else None


PERCENTILE_CAPTION = "Percentiles interpolate linearly between the two closest turns."
"""How every p50 and p95 is computed (:func:`benchmarks.stats.percentile`), said under the summary table."""

LATENCY_CAPTION = (
    "Latency is a turn's measured model time plus harness time; simulated replaces the measured model time "
    "with the latency profile's. First answer is the time from a turn's start until the first token of the "
    "answer reaches the reader (the benchmark streams every turn), measured on this machine; simulated first "
    "answer is the profile's model time to that token (the calls before the answering one plus that call's "
    "first tokens), harness time not included. First-answer figures count the turns that streamed answer "
    "text (failed turns without one are left out)."
)
"""What the summary table's latency columns are, measured and simulated (reports and README block)."""


Column = tuple[str, Callable[[ModeSummary], str]]
"""A column of a per-mode table: its header and how a mode's cell reads."""


def mode_table(summary: Summary, columns: Sequence[Column]) -> Table:
    """One row per (target, mode) of ``summary``: the columns naming it, then ``columns``."""
    rows = [[*_lead(target, m), *(cell(m) for _, cell in columns)] for target, m in summary.cells()]
    return [*lead_header(summary), *(name for name, _ in columns)], rows


def _pair(mode: ModeSummary, figure: str) -> str:
    """``figure``'s p50 / p95 in ms (``"latency"`` reads ``latency_p50`` and ``latency_p95``)."""
    return f"{_ms(getattr(mode, f'{figure}_p50'))} / {_ms(getattr(mode, f'{figure}_p95'))}"


def _some(summary: Summary, has: Callable[[ModeSummary], object]) -> bool:
    return any(has(m) for _, m in summary.cells())


def summary_rows(summary: Summary) -> Table:
    """The per-mode summary table, shared by the Markdown and HTML reports and the README block.

    Time to the first answer token sits beside total latency, measured then simulated; the cached-input and
    first-answer columns appear only when some mode has the figure.
    """
    cached = _some(summary, lambda m: m.cached_share is not None)
    first = _some(summary, lambda m: m.first_answer_p50 is not None)
    simulated_first = _some(summary, lambda m: m.simulated_first_answer_p50 is not None)
    columns: list[Column | None] = [
        ("turns", lambda m: str(m.turns)),
        ("accuracy (95% CI)", accuracy_cell),
        ("calls/turn (mean / max)", lambda m: f"{m.calls_mean:.2f} / {m.calls_max}"),
        ("input tok/turn", lambda m: tokens_text(m, m.input_tokens_mean)),
        ("cached input", lambda m: tokens_text(m, m.cached_share, ".0%")) if cached else None,
        ("output tok/turn", lambda m: tokens_text(m, m.output_tokens_mean)),
        ("latency p50 / p95 ms", lambda m: _pair(m, "latency")),
        ("first answer p50 / p95 ms", lambda m: _pair(m, "first_answer")) if first else None,
        ("simulated p50 / p95 ms", lambda m: _pair(m, "simulated")),
        ("simulated first answer p50 / p95 ms", lambda m: _pair(m, "simulated_first_answer"))
        if simulated_first
        else None,
        ("harness p50 / p95 ms", lambda m: f"{m.harness_p50:.2f} / {m.harness_p95:.2f}"),
        ("valid plans", valid_plan_cell),
        ("failed", lambda m: str(m.failed_turns)),
    ]
    return mode_table(summary, [c for c in columns if c is not None])


def category_rows(summary: Summary) -> Table:
    """Accuracy per category (rows) and mode (columns): ``"92% [65–99] (12)"``; per target for a matrix."""
    if summary.matrix:
        return per_target(summary, category_rows) or (["target", "category"], [])
    modes = [m.mode for m in summary.modes]
    cells: dict[str, dict[str, str]] = {}
    for c in summary.categories:
        interval = percent_interval(c.accuracy_interval, 0)
        cells.setdefault(c.category, {})[c.mode] = f"{c.accuracy:.0%}" + (
            f" [{interval}] ({c.turns})" if interval else f" ({c.turns})"
        )
    header = ["category", *modes]
    rows = [[category, *(per.get(mode, "–") for mode in modes)] for category, per in sorted(cells.items())]
    return header, rows


def signed_points(value: float) -> str:
    """An accuracy difference in signed percentage points: ``"+2.3"``, ``"−1.0"``."""
    return f"{value * 100:+.1f}".replace("-", "−")


def paired_rows(summary: Summary) -> Table | None:
    """The base mode against each other mode on the turns both ran (within each target of a matrix);
    ``None`` with a single mode."""
    if summary.matrix:
        return per_target(summary, paired_rows)
    if not summary.paired:
        return None
    header = [
        "base vs other",
        "paired turns",
        "both passed",
        "only base",
        "only other",
        "neither",
        "accuracy base / other",
        "difference (points)",
        "95% interval",
        "McNemar p",
        "verdict",
    ]
    rows = []
    for p in summary.paired:
        interval = (
            f"{signed_points(p.interval.low)} to {signed_points(p.interval.high)}" if p.interval else "–"
        )
        if p.established:
            verdict = f"{p.base if p.difference > 0 else p.other} more accurate"
        else:
            verdict = "same turns passed" if p.base_only == p.other_only == 0 else "no difference established"
        counts = [str(n) for n in (p.pairs, p.both, p.base_only, p.other_only, p.neither)]
        accuracy = f"{p.base_accuracy:.1%} / {p.other_accuracy:.1%}"
        difference = signed_points(p.difference)
        rows.append(
            [f"{p.base} vs {p.other}", *counts, accuracy, difference, interval, f"{p.p_value:.3f}", verdict]
        )
    return header, rows


INTERVALS_CAPTION = (
    "Bootstrap 95% intervals (2,000 draws, fixed seed) resampling turns with all their repetitions."
)
"""Under the intervals table of every report."""


def paired_caption(summary: Summary) -> str:
    """What the paired comparison is (and, for a matrix, that modes are paired within each target)."""
    return PAIRED_CAPTION + (" Each target's modes are paired within that target." if summary.matrix else "")


PAIRED_CAPTION = (
    "Both modes on the same turns (scenario, turn, repetition). McNemar's exact test counts the turns only "
    "one mode passed; the interval of the accuracy difference is a bootstrap that resamples whole "
    "conversations (2,000 draws, fixed seed). A difference is stated only when the interval excludes 0 "
    "and p < 0.05."
)


_INTERVALS = (
    ("latency mean ms", "latency_mean", 1),
    ("latency p50 ms", "latency_p50", 1),
    ("first answer p50 ms", "first_answer_p50", 1),
    ("simulated p50 ms", "simulated_p50", 0),
    ("simulated first answer p50 ms", "simulated_first_answer_p50", 0),
    ("input tok/turn", "input_tokens_mean", 0),
    ("output tok/turn", "output_tokens_mean", 0),
)
"""The intervals table's columns: (header, the figure and its interval's name, decimals)."""

_OPTIONAL_INTERVALS = frozenset({"first_answer_p50", "simulated_first_answer_p50"})
"""Interval columns shown only when some mode has the interval."""


def interval_rows(summary: Summary) -> Table | None:
    """Bootstrap intervals of latency and tokens per mode (and target); ``None`` without repetitions."""
    if not _some(summary, lambda m: m.intervals):
        return None

    def cell(name: str, decimals: int) -> Callable[[ModeSummary], str]:
        def read(mode: ModeSummary) -> str:
            value, interval = getattr(mode, name), mode.intervals.get(name)
            if value is None or interval is None:
                return "–"
            return f"{value:.{decimals}f} ({interval.low:.{decimals}f}–{interval.high:.{decimals}f})"

        return read

    shown = [name for _, name, _ in _INTERVALS if name not in _OPTIONAL_INTERVALS]
    shown += [name for name in _OPTIONAL_INTERVALS if any(name in m.intervals for _, m in summary.cells())]
    return mode_table(
        summary, [(head, cell(name, places)) for head, name, places in _INTERVALS if name in shown]
    )


def costs_of(cost: CostEstimate | Sequence[CostEstimate]) -> list[CostEstimate]:
    """One estimate, or one per target, as a list."""
    return [cost] if isinstance(cost, CostEstimate) else list(cost)


def usd_cell(value: float | None) -> str:
    """USD per 1,000 turns, or ``–`` for a model without a price."""
    return "–" if value is None else f"{value:.2f}"


def _references(costs: Sequence[CostEstimate]) -> list[str]:
    """The hosted models the cost table also prices the tokens at (the run's own models left out)."""
    priced = {c.priced_as for c in costs}
    return [name for name in costs[0].reference if name not in priced] if costs else []


def cost_rows(cost: CostEstimate | Sequence[CostEstimate]) -> Table:
    """Token means and USD per 1,000 turns per mode (and target, when given one estimate per target)."""
    costs = costs_of(cost)
    matrix = any(c.target is not None for c in costs)
    references = _references(costs)
    header = [
        *(["target", "mode"] if matrix else ["mode"]),
        "input tok/turn",
        "cached input tok/turn",
        "output tok/turn",
        "USD per 1,000 turns",
        *(f"at {name} prices" for name in references),
    ]
    rows = [
        [
            *([c.target or ""] if matrix else []),
            m.mode,
            *(
                (f"{v:.0f}" for v in (m.input_tokens_mean, m.cached_input_tokens_mean, m.output_tokens_mean))
                if m.tokens_reported
                else ["not reported"] * 3
            ),
            usd_cell(m.usd_per_1000_turns) if m.tokens_reported else "not reported",
            *(f"{m.reference_usd[name]:.2f}" if name in m.reference_usd else "–" for name in references),
        ]
        for c in costs
        for m in c.modes
    ]
    return header, rows


def cost_caption(cost: CostEstimate | Sequence[CostEstimate]) -> str:
    """The prices' source (per target in a matrix), and what the reference columns are."""
    costs = costs_of(cost)
    if any(c.target is not None for c in costs) and len({c.note for c in costs}) > 1:
        text = "Prices: " + "; ".join(f"{c.target}: {c.note}" for c in costs) + "."
    elif len(costs) > 1:
        text = f"Prices (every target): {costs[0].note}."
    else:
        text = f"Prices: {costs[0].note}." if costs else "Prices: none."
    references = _references(costs)
    if references:
        text += (
            f" The {', '.join(references)} columns price the same tokens at those hosted models' prices "
            "(benchmarks/pricing.yaml), for a sense of scale."
        )
    return text


def failure_rows(summary: Summary) -> Table | None:
    """Failed turns per failure kind (rows) and mode (columns), per target for a matrix; ``None`` when no
    turn failed."""
    if summary.matrix:
        return per_target(summary, failure_rows)
    kinds = [kind for kind in FAILURE_KINDS if any(kind in m.failures for m in summary.modes)]
    if not kinds:
        return None
    header = ["failure kind", *(m.mode for m in summary.modes)]
    rows = [[kind, *(str(m.failures.get(kind, 0)) for m in summary.modes)] for kind in kinds]
    return header, rows


def pass_k_rows(summary: Summary) -> Table:
    """pass^1 … pass^k per mode (and target)."""

    def column(k: int) -> Column:
        return f"pass^{k}", lambda m: f"{m.pass_k[k]:.1%}" if k in m.pass_k else "–"

    return mode_table(summary, [column(k) for k in range(1, summary.repetitions + 1)])


def growth_rows(summary: Summary) -> Table | None:
    """Input tokens at the first and last turn of the long conversation per mode (and target)."""
    if summary.matrix:
        return per_target(summary, growth_rows)
    if summary.growth is None:
        return None
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
    return header, rows


def growth_scenarios(summary: Summary) -> list[str]:
    """The long conversation(s) the growth figures come from."""
    growths = [t.summary.growth for t in summary.targets] if summary.matrix else [summary.growth]
    return list(dict.fromkeys(g.scenario for g in growths if g is not None))


CONVERSATION_STATE_POLICY = (
    "Conversation state: every mode stores the state the ERP derives from the operations it ran (year, "
    "customer, product, last operations); the planner's call 2 may add its own `estado`/`memoria`; tool "
    "calling adds them only with --structured."
)
"""What each mode keeps between turns, said in every report (like for like)."""

MODE_DESCRIPTIONS = {
    "planner": (
        "The article's architecture: call 1 turns the question plus context (memory and conversation state) "
        "into a plan of operations, the ERP validates and runs them, call 2 writes the answer; at most two "
        "model calls per turn."
    ),
    "toolcalling": (
        "A LangChain agent with native tool calls: the model calls the ERP's operations as tools, as many "
        "steps as it needs; its context is memory plus conversation state, like the planner's."
    ),
    "toolcalling-full": (
        "The same tool-calling agent with the conversation's full message history as its context."
    ),
}
"""One or two sentences per mode: what the architecture is, said beside its figures."""


def mode_description(mode: str) -> str:
    """What ``mode`` is (an unknown mode is described as such)."""
    return MODE_DESCRIPTIONS.get(mode, "A mode this report does not describe.")


def prefix_cache_text(meta: RunMeta) -> str | None:
    """``"prefix cache modelled: yes"`` (or ``no``, ``not recorded``) when an offline model ran."""
    if not meta.any_offline:
        return None
    value = {True: "yes", False: "no", None: "not recorded"}[meta.prompt_cache]
    return f"prefix cache modelled: {value}"


def who_ran(meta: RunMeta) -> str:
    """``"provider `openai`, model `gpt-4o-mini`"``, or ``"targets `a` (offline offline-sales), `b` (…)"``."""
    if meta.matrix:
        return "targets " + ", ".join(f"`{t.name}` ({t.label})" for t in meta.targets)
    return f"provider `{meta.provider}`" + (f", model `{meta.model}`" if meta.model else "")


def targets_table(meta: RunMeta) -> Table:
    """One row per target: name, provider, model (the provider's default when none was given), base URL."""
    return (
        ["target", "provider", "model", "base URL"],
        [[t.name, t.provider, t.model_name, t.base_url or "–"] for t in meta.targets],
    )


def provenance_rows(meta: RunMeta) -> list[tuple[str, str]]:
    """``(what, value)`` pairs of the run's provenance (empty for files that predate it)."""
    p = meta.provenance
    if p is None:
        return []
    commit = "unknown" if p.git_commit is None else p.git_commit[:12] + (" (dirty)" if p.git_dirty else "")
    rows = [
        ("code", f"git {commit}"),
        ("python", f"{p.python} on {p.platform}"),
        ("host", p.host),
        ("packages", ", ".join(f"{name} {version}" for name, version in p.packages.items())),
    ]
    identities = (
        [(f"model {name}", identity) for name, identity in p.models.items()]
        if meta.matrix and p.models
        else [("model", p.model)]
        if p.model is not None
        else []
    )
    for what, identity in identities:
        model = f"{identity.provider} {identity.model or ''}".strip()
        if identity.base_url:
            model += f" at {identity.base_url}"
        if identity.digest:
            model += f", digest {identity.digest[:12]}"
        if identity.modified_at:
            model += f", modified {identity.modified_at}"
        details = ", ".join(f"{k} {v}" for k, v in identity.details.items() if not isinstance(v, dict))
        rows.append((what, model + (f" ({details})" if details else "")))
    rows += [(f"prompt {name}", digest[:12]) for name, digest in p.prompt_hashes.items()]
    if p.catalog_hash:
        rows.append(("operations catalog", p.catalog_hash[:12]))
    if p.tool_schema_hash:
        rows.append(("tool schemas", p.tool_schema_hash[:12]))
    rows += [("note", note) for note in p.notes]
    return rows


MATRIX_CAPTION = (
    "Targets as rows, modes as columns. Every figure is computed from one target's turns; statistics that "
    "compare modes (the paired comparison) are computed within a target, never across targets."
)


def matrix_grids(
    summary: Summary, cost: CostEstimate | Sequence[CostEstimate]
) -> list[tuple[str, list[str], list[list[str]]]]:
    """The model matrix: ``(title, header, rows)`` per figure, targets as rows and modes as columns; a figure
    no cell has (cached share, simulated latency, first answer) is left out. Empty for one target."""
    if not summary.matrix:
        return []
    modes = list(dict.fromkeys(m.mode for _, m in summary.cells()))
    costs = {c.target: c for c in costs_of(cost)}

    def ms(value: float | None) -> str:
        return "–" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"

    def usd(target: str, mode: str) -> str:
        found = costs.get(target)
        cell = found.mode(mode) if found is not None else None
        return usd_cell(cell.usd_per_1000_turns) if cell is not None else "–"

    figures: list[tuple[str, Callable[[ModeSummary], str | None]]] = [
        ("Accuracy (95% CI)", accuracy_cell),
        ("Model calls per turn (mean)", lambda m: f"{m.calls_mean:.2f}"),
        ("Input tokens per turn (mean)", lambda m: tokens_text(m, m.input_tokens_mean, ",.0f")),
        ("Output tokens per turn (mean)", lambda m: tokens_text(m, m.output_tokens_mean, ",.0f")),
        (
            "Cached share of input",
            lambda m: None if m.cached_share is None else tokens_text(m, m.cached_share, ".0%"),
        ),
        ("Latency p50 ms, simulated", lambda m: None if m.simulated_p50 is None else ms(m.simulated_p50)),
        ("Latency p50 ms, measured", lambda m: ms(m.latency_p50)),
        (
            "First answer p50 ms, simulated",
            lambda m: None if m.simulated_first_answer_p50 is None else ms(m.simulated_first_answer_p50),
        ),
        (
            "First answer p50 ms, measured",
            lambda m: None if m.first_answer_p50 is None else ms(m.first_answer_p50),
        ),
        ("Valid plans", valid_plan_cell),
    ]
    grids = []
    for title, read in figures:
        rows = []
        for entry in summary.targets:
            row = [entry.target.name]
            for mode in modes:
                found = entry.summary.mode(mode)
                value = read(found) if found is not None else None
                row.append("–" if value is None else value)
            rows.append(row)
        if any(cell != "–" for row in rows for cell in row[1:]):
            grids.append((title, ["target", *modes], rows))
    grids.append(
        (
            "USD per 1,000 turns",
            ["target", *modes],
            [[t.target.name, *(usd(t.target.name, mode) for mode in modes)] for t in summary.targets],
        )
    )
    return grids


WRONG_ANSWER = "failed checks"
"""The kind of a turn that ended normally but whose answer, operations or state failed the scorer's checks."""

KIND_ORDER = (*FAILURE_KINDS, WRONG_ANSWER)


@dataclass(frozen=True)
class FailureGroup:
    """The not-passed turns of one (target, mode) of one kind."""

    target: str
    mode: str
    kind: str
    turns: list[TurnRow]
    """Every turn of the group, in the run's order (repetition 1 first)."""

    @property
    def example(self) -> TurnRow:
        """The group's first turn: its example."""
        return self.turns[0]


def kind_of(row: TurnRow) -> str:
    """A not-passed turn's kind: its failure kind, else :data:`WRONG_ANSWER`."""
    return row.failure or ("provider" if row.failed else WRONG_ANSWER)


def failure_groups(rows: Sequence[TurnRow]) -> list[FailureGroup]:
    """The not-passed, not warm-up turns grouped by target, mode and kind, in the rows' target and mode order
    and the contract's kind order (failed checks last)."""
    groups: dict[tuple[str, str, str], list[TurnRow]] = {}
    order: dict[tuple[str, str], int] = {}
    for row in rows:
        order.setdefault((row.target, row.mode), len(order))
        if row.warmup or row.passed:
            continue
        groups.setdefault((row.target, row.mode, kind_of(row)), []).append(row)
    ranked = sorted(groups.items(), key=lambda kv: (order[kv[0][:2]], KIND_ORDER.index(kv[0][2])))
    return [
        FailureGroup(target, mode, kind, sorted(turns, key=lambda r: r.repetition))
        for (target, mode, kind), turns in ranked
    ]


def why(row: TurnRow) -> str:
    """What went wrong on the turn: the scorer's reasons, else the errors, else ``"failed"``."""
    return "; ".join(row.score.details or row.errors) or "failed"


def _flat(text: str) -> str:
    return " ".join(text.split())


def example_text(row: TurnRow, limit: int = 240) -> str:
    """``scenario · turn 3: “question” → “answer”: why`` (the answer and the reason cut to ``limit``)."""
    question, answer = clip(_flat(row.user), 120), clip(_flat(row.answer) or "(no answer)", limit)
    return f"{row.scenario} · turn {row.turn}: “{question}” → “{answer}”: {clip(_flat(why(row)), limit)}"
