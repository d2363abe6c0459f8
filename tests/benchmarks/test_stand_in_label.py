"""A run against one of the project's emulators is labeled as the offline stand-in, never as a real model."""

from __future__ import annotations

import pytest

from benchmarks.provenance import ModelIdentity, Provenance, model_identity
from benchmarks.report.aggregate import summarize
from benchmarks.report.findings import OFFLINE_NOTICE
from benchmarks.report.markdown import render_markdown
from benchmarks.results import RunMeta, RunResults
from benchmarks.stand_ins.emulators import EmulatorKind, create_emulator
from benchmarks.targets import DEFAULT_TARGET

MODELS = {"ollama": "llama3.1:8b", "openai": "gpt-4o-mini", "gemini": "gemini-2.5-flash"}


@pytest.mark.parametrize("kind", ["ollama", "openai", "gemini"])
def test_every_emulator_says_the_offline_model_answers_behind_it(kind: EmulatorKind) -> None:
    with create_emulator(kind) as server:
        base_url = f"{server.base_url}/v1" if kind == "openai" else server.base_url
        identity, note = model_identity(kind, MODELS[kind], base_url, api_key="k")

    assert note is None
    assert identity.stand_in
    assert any("OfflineSalesModel answers" in str(value) for value in identity.details.values())


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
