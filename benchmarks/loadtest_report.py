"""The load test's figures as Markdown: the README's "Scaling out" table, written by code from the runs.

``erp-ai loadtest --matrix --readme README.md`` replaces what stands between the block's markers (see
:mod:`benchmarks.report.readme`)::

    <!-- BENCH-FIGURES:scaling-out:START … -->
    <!-- BENCH-FIGURES:scaling-out:END -->
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from benchmarks.loadtest import LoadtestResult
from benchmarks.provenance import describe_host, git_state
from benchmarks.report.markdown import render_table
from benchmarks.report.readme import end_marker, start_marker

__all__ = ["BLOCK", "WRITER", "scaling_block"]

BLOCK = "scaling-out"
WRITER = "erp-ai loadtest --matrix … --readme README.md"

HEADERS = [
    "servers", "database", "server killed", "turns sent", "recorded", "failed (kind)", "lost", "duplicated",
    "half-recorded / inconsistent", "turns/s", "turn p50 / p99 ms", "AI calls / ERP side p50 ms",
]  # fmt: skip


def _killed(result: LoadtestResult) -> str:
    if not result.killed:
        return (
            "no" if result.kill_one_at is None and result.kill_after_turns is None else "no (run ended first)"
        )
    killed = next(event for event in result.events if event.kind == "killed")
    back = next((event for event in result.events if event.kind == "healthy"), None)
    text = f"at {killed.at_s:.1f} s"
    return text + (f", back at {back.at_s:.1f} s" if back is not None else ", not restarted")


def _failed(result: LoadtestResult) -> str:
    kinds = result.audit.failed_by_kind
    if not kinds:
        return "0"
    return f"{result.audit.failed} (" + ", ".join(f"{kind} {count}" for kind, count in kinds.items()) + ")"


def _row(result: LoadtestResult) -> list[str]:
    audit = result.audit
    database = result.backend
    if result.memory_backend != result.backend:
        database += f" + {result.memory_backend} memory"
    return [
        str(result.servers),
        database,
        _killed(result),
        str(audit.attempted),
        str(audit.recorded),
        _failed(result),
        str(audit.lost),
        str(audit.duplicated),
        f"{audit.half_recorded + audit.phantom} / {audit.inconsistent_conversations}",
        f"{result.turns_per_s:.1f}",
        f"{result.latency.p50_ms:.0f} / {result.latency.p99_ms:.0f}",
        f"{result.ai_latency.p50_ms:.0f} / {result.erp_latency.p50_ms:.0f}",
    ]


def _source(results: Sequence[LoadtestResult]) -> str:
    first = results[0]
    commit, dirty, _note = git_state()
    code = (
        f", code at commit `{commit[:12]}`" + (" with uncommitted changes" if dirty else "") if commit else ""
    )
    kills = sorted({result.kill_one_at for result in results if result.kill_one_at is not None})
    restarts = sorted({result.restart_after for result in results if result.restart_after is not None})
    kill_text = (
        f"; a killed server got `SIGKILL` {', '.join(f'{k:g}' for k in kills)} s into the load"
        + (f" and was started again {', '.join(f'{r:g}' for r in restarts)} s later" if restarts else "")
        if kills
        else ""
    )
    loads = [result.load_average[0] for result in results if result.load_average is not None]
    load_text = (
        f" (1-minute load average {min(loads):.1f}–{max(loads):.1f} when the runs started: other work on "
        "the machine slows every figure)"
        if loads
        else ""
    )
    return (
        f"Measured by `erp-ai loadtest --matrix` on {first.started_at[:10] or date.today().isoformat()} "
        f"with provider `{first.provider}`: {first.conversations} conversations at once × {first.turns} "
        f"turns each per run, planner mode through the round-robin HTTP client, the ERP process and every "
        f"AI server on one machine ({describe_host()}){load_text}{kill_text}{code}."
    )


def _findings(results: Sequence[LoadtestResult]) -> list[str]:
    lines: list[str] = []
    unclean = [result for result in results if not result.ok]
    if unclean:
        lines.append(
            f"{len(unclean)} of {len(results)} runs failed the audit (see the lost, duplicated, "
            "half-recorded and inconsistent columns)."
        )
    else:
        lines.append(
            f"All {len(results)} runs pass the audit: no message lost or duplicated, no turn half-recorded "
            "or out of order, every conversation's state and version consistent with its stored turns."
        )
    killed = [result for result in results if result.killed]
    if killed:
        kinds = sorted({kind for result in killed for kind in result.audit.failed_by_kind})
        per_fleet = "; ".join(
            f"{count} server(s): " + ", ".join(str(r.audit.failed) for r in killed if r.servers == count)
            for count in sorted({result.servers for result in killed})
        )
        lines.append(
            f"Turns failed in the runs with a server killed, by fleet size: {per_fleet}"
            + (f"; every failure of kind {', '.join(kinds)}" if kinds else "")
            + ". A request that could not connect is retried on the next server (a lone server's requests "
            "fail until it is back); a request the dying server was answering fails, and its turn leaves "
            "the conversation untouched."
        )
    lines += _scaling(results)
    if all(result.erp_latency.p50_ms > result.ai_latency.p50_ms for result in results):
        lines.append(
            "In every run a turn's median time on the ERP side (reading the context, running the operations' "
            "SQL, recording; one process for every conversation) exceeded its median time in the two AI "
            "calls: on one machine the ERP process is the larger cost, and AI servers added on the same "
            "cores compete with it for them."
        )
    return lines


def _scaling(results: Sequence[LoadtestResult]) -> list[str]:
    """Turns/s of the most servers against the fewest, per database, in the runs without a kill."""
    parts: list[str] = []
    for backend in dict.fromkeys(result.backend for result in results):
        calm = sorted(
            (result for result in results if result.backend == backend and not result.killed),
            key=lambda result: result.servers,
        )
        if len(calm) >= 2 and calm[-1].servers > calm[0].servers and calm[0].turns_per_s > 0:
            low, high = calm[0], calm[-1]
            parts.append(
                f"{high.turns_per_s / low.turns_per_s:.2f}× on {backend} "
                f"({low.turns_per_s:.1f} → {high.turns_per_s:.1f})"
            )
    if not parts:
        return []
    fewest = min(result.servers for result in results)
    most = max(result.servers for result in results)
    return [f"Without a kill, {most} servers instead of {fewest} gave " + " and ".join(parts) + " turns/s."]


def scaling_block(results: Sequence[LoadtestResult]) -> str:
    """The Markdown between the block's markers, markers included."""
    if not results:
        raise ValueError("no load test results to write")
    lines = [start_marker(BLOCK, WRITER), "", _source(results), ""]
    lines += render_table(HEADERS, [_row(r) for r in results], align="rll" + "r" * (len(HEADERS) - 3))
    lines += [""]
    lines += [f"- {sentence}" for sentence in _findings(results)]
    lines += [
        "",
        "*turns/s counts recorded turns per second of load; p50/p99 are whole-turn latencies (both model "
        "calls, the ERP's work and the recording) as the ERP side saw them.*",
        "",
        end_marker(BLOCK),
    ]
    return "\n".join(lines)
