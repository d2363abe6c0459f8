"""``POST /ai/analyze`` throughput of one AI server: requests per second and latency at a fixed concurrency.

``python -m benchmarks.loadtest_analyze [--workers N] [--concurrency 64] [--seconds 10]`` starts
``erp-ai serve --workers N`` (offline model) on a loopback port, or measures ``--url`` (loopback only), sends
a real call 1 request again and again, and prints the result as JSON.

The load generator is lean because it shares the server's cores: ``concurrency`` keep-alive HTTP/1.1
connections on raw asyncio streams, each sending its next request once the previous response is read (a
closed loop: ``concurrency ≈ req/s × mean latency``); httpx would spend more CPU per request than the
server's HTTP layer. After ``warmup`` seconds, every request completed within ``seconds`` counts. The CPU
time each request cost (server and client, from ``/proc``) is recorded too: ``1000 / (server + client CPU
ms)`` is what one free core would sustain, whatever else the machine runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections import Counter
from collections.abc import Sequence
from datetime import date

import httpx
from pydantic import BaseModel, Field

from benchmarks.loadtest import QUESTIONS, LatencySummary, load_average
from benchmarks.loadtest_fleet import HOST, Fleet, ServeOptions, descendants, serve_command

__all__ = ["AnalyzeLoadResult", "analyze_body", "main", "measure"]

MAX_CONCURRENCY = 1024
MAX_SECONDS = 300.0
_TODAY = date(2026, 11, 30)
"""The demo ERP's ``today``: the context every request carries."""


class AnalyzeLoadResult(BaseModel):
    """What a measurement found."""

    url: str
    concurrency: int
    seconds: float
    """Wall time of the counted part of the load."""
    requests: int
    """Requests completed (any status) within it."""
    statuses: dict[int, int] = Field(default_factory=dict)
    req_per_s: float
    latency: LatencySummary
    workers: int | None = None
    """Worker processes of the server, when this tool started it."""
    server_cpu_ms: float | None = None
    """CPU time of the server's processes per counted request (when this tool started it, on Linux)."""
    client_cpu_ms: float | None = None
    """CPU time of the load generator (this process) per counted request."""
    load_average: tuple[float, float, float] | None = None


def analyze_body() -> bytes:
    """A real call 1 request body: the demo's first question, an empty context, the manager's catalog."""
    from planner_mode.server.wire import AnalyzeRequest
    from shared.memory.context import ConversationContext
    from shared.operations.sales import sales_registry
    from shared.security import DEMO_CALLER

    request = AnalyzeRequest(
        message=QUESTIONS[0],
        context=ConversationContext(today=_TODAY),
        catalog=sales_registry().catalog(DEMO_CALLER),
    )
    return request.model_dump_json().encode()


def measure(
    url: str,
    *,
    concurrency: int = 64,
    seconds: float = 10.0,
    warmup: float = 1.0,
    body: bytes | None = None,
    server_pid: int | None = None,
) -> AnalyzeLoadResult:
    """Load ``url``'s ``/ai/analyze`` from ``concurrency`` connections for ``warmup`` + ``seconds`` s."""
    parsed = httpx.URL(url)
    if parsed.host not in (HOST, "localhost"):
        raise ValueError(f"the load generator only targets this machine ({HOST}), not {url!r}")
    if not 1 <= concurrency <= MAX_CONCURRENCY or not 0 < seconds <= MAX_SECONDS or warmup < 0:
        raise ValueError(f"concurrency 1–{MAX_CONCURRENCY}, seconds 0–{MAX_SECONDS:g}, warmup ≥ 0")
    port = parsed.port or 80
    payload = body if body is not None else analyze_body()
    request = (
        f"POST /ai/analyze HTTP/1.1\r\nHost: {parsed.host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode() + payload
    host = parsed.host

    async def run() -> AnalyzeLoadResult:
        started = time.perf_counter()
        counting_from = started + warmup
        end = counting_from + seconds
        latencies: list[float] = []
        statuses: Counter[int] = Counter()

        async def connection() -> None:
            reader, writer = await asyncio.open_connection(host, port)
            try:
                while time.perf_counter() < end:
                    sent = time.perf_counter()
                    writer.write(request)
                    status = await _read_response(reader)
                    done = time.perf_counter()
                    if sent >= counting_from and done <= end:
                        statuses[status] += 1
                        latencies.append((done - sent) * 1000)
            finally:
                writer.close()

        async def cpu_at(moment: float) -> None:
            await asyncio.sleep(max(0.0, moment - time.perf_counter()))
            cpu.extend([time.process_time(), _tree_cpu_seconds(server_pid)])

        cpu: list[float | None] = []
        averages = load_average()
        await asyncio.gather(cpu_at(counting_from), cpu_at(end), *(connection() for _ in range(concurrency)))
        counted = len(latencies)
        client_start, server_start, client_end, server_end = cpu
        return AnalyzeLoadResult(
            url=url,
            concurrency=concurrency,
            seconds=seconds,
            requests=counted,
            statuses=dict(sorted(statuses.items())),
            req_per_s=round(counted / seconds, 1),
            latency=LatencySummary.of(latencies),
            load_average=averages,
            server_cpu_ms=_per_request(server_start, server_end, counted),
            client_cpu_ms=_per_request(client_start, client_end, counted),
        )

    return asyncio.run(run())


def _per_request(start: float | None, end: float | None, requests: int) -> float | None:
    if start is None or end is None or requests == 0:
        return None
    return round((end - start) * 1000 / requests, 3)


def _tree_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of the live process ``pid`` and its descendants (Linux ``/proc``)."""
    if pid is None:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    try:
        for current in [pid, *descendants(pid)]:
            with open(f"/proc/{current}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14 and 15)
    except (OSError, ValueError, IndexError):
        return None
    return total


async def _read_response(reader: asyncio.StreamReader) -> int:
    """Read one response (``Content-Length`` body); return its status code."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loadtest_analyze", description=__doc__)
    parser.add_argument("--url", help="A running AI server on this machine (default: start erp-ai serve).")
    parser.add_argument("--workers", type=int, default=1, help="erp-ai serve --workers (without --url).")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    args = parser.parse_args(argv)
    if args.url:
        result = measure(args.url, concurrency=args.concurrency, seconds=args.seconds, warmup=args.warmup)
    else:
        with Fleet(serve_command(ServeOptions(), workers=args.workers), 1) as fleet:
            result = measure(
                fleet.urls[0],
                concurrency=args.concurrency,
                seconds=args.seconds,
                warmup=args.warmup,
                server_pid=fleet.pid(0),
            )
        result.workers = args.workers
    print(json.dumps(result.model_dump(mode="json"), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
