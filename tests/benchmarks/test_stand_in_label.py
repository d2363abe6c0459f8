"""A run against one of the project's emulators is labeled as the offline stand-in, never as a real model."""

from __future__ import annotations

from benchmarks.provenance import ModelIdentity, Provenance
from benchmarks.report.aggregate import summarize
from benchmarks.report.findings import OFFLINE_NOTICE
from benchmarks.report.markdown import render_markdown
from benchmarks.results import RunMeta, RunResults
from benchmarks.targets import DEFAULT_TARGET


def test_a_report_of_an_emulator_run_keeps_the_stand_in_banner() -> None:
    identity = ModelIdentity(
        provider="ollama", model="llama3.1:8b", details={"stand_in": "erp-ai emulator: X"}
    )
    meta = RunMeta(
        provider="ollama",
        model="llama3.1:8b",
        base_url="http://127.0.0.1:11434",
        provenance=Provenance(model=identity),  # a run without --target records the one model only
    )

    assert meta.offline
    results = RunResults(meta=meta, rows=[])
    assert OFFLINE_NOTICE in render_markdown(results, summarize(results.rows))


def test_a_real_servers_identity_is_not_a_stand_in() -> None:
    real = ModelIdentity(provider="openai", model="q", details={"id": "q", "owned_by": "llamacpp"})
    meta = RunMeta(provider="openai", model="q", provenance=Provenance(models={DEFAULT_TARGET: real}))

    assert not real.stand_in and not meta.offline
