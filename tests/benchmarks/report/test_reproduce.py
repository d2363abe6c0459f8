"""The command that reproduces a run, rebuilt from its ``run`` line (benchmarks/report/readme.py): the
``erp-ai bench`` parser accepts it and reads back the run's settings."""

from __future__ import annotations

import shlex
from typing import Any

import pytest
from typer.main import get_command

from benchmarks.cli.app import app
from benchmarks.provenance import Provenance
from benchmarks.report.readme import bench_command, reproduce_text
from benchmarks.results import RunMeta
from benchmarks.targets import parse_targets


def _parsed(command: str) -> dict[str, Any]:
    """What ``erp-ai bench`` reads from ``command`` (parsed, not run)."""
    words = shlex.split(command)
    if "=" in words[0]:  # an environment assignment
        words = words[1:]
    assert words[:2] == ["erp-ai", "bench"]
    bench = get_command(app).commands["bench"]  # type: ignore[attr-defined]
    params = dict(bench.make_context("bench", words[2:]).params)
    return {name: tuple(v) if isinstance(v, list) else v for name, v in params.items()}


def test_a_real_model_run_is_reproduced_with_every_recorded_setting() -> None:
    meta = RunMeta(
        provider="openai",
        model="qwen2.5-coder-1.5b-instruct",
        base_url="http://127.0.0.1:8101/v1",
        modes=["planner", "toolcalling"],
        scenario_paths=["benchmarks/scenarios/01_articulo.yaml", "benchmarks/scenarios/07 permisos.yaml"],
        tags=["articulo"],
        repeat=3,
        warmup=1,
        concurrency=2,
        structured=True,
        plan_schema="enum",
        tool_call_recovery=False,
        max_tokens=512,
        timeout=900.0,
    )
    command = bench_command(meta)
    assert command.startswith("OPENAI_API_KEY=unused erp-ai bench "), "a local server takes any key"
    params = _parsed(command)
    assert (params["provider"], params["model"], params["base_url"]) == (
        meta.provider,
        meta.model,
        meta.base_url,
    )
    assert params["modes"] == ("planner,toolcalling",) and params["tag"] == ("articulo",)
    assert [str(p) for p in params["scenarios"]] == meta.scenario_paths, "a path with a space stays one word"
    assert (params["repeat"], params["warmup"], params["concurrency"]) == (3, 1, 2)
    assert params["structured"] is True and params["tool_call_recovery"] is False
    assert params["plan_schema"] == "enum"
    assert (params["max_tokens"], params["timeout"]) == (512, 900.0)


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (RunMeta(provider="offline", latency_profile="gpu-8b", prompt_cache=False), {"prompt_cache": False}),
        (RunMeta(provider="offline", prompt_cache=True), {"prompt_cache": True, "latency_profile": None}),
        (
            RunMeta(targets=parse_targets(["a=offline", "b=ollama:llama3.1:8b@http://127.0.0.1:11434"])),
            {"target": ("a=offline", "b=ollama:llama3.1:8b@http://127.0.0.1:11434"), "provider": None},
        ),
    ],
    ids=["no-prompt-cache", "defaults", "targets"],
)
def test_offline_switches_and_targets_are_reproduced(meta: RunMeta, expected: dict[str, Any]) -> None:
    command = bench_command(meta)
    assert not command.startswith("OPENAI_API_KEY")
    params = _parsed(command)
    assert {name: params[name] for name in expected} == expected
    if meta.latency_profile:
        assert params["latency_profile"] == meta.latency_profile


def test_the_command_says_which_code_to_run_it_from() -> None:
    assert "commit was not recorded" in reproduce_text(RunMeta())
    dirty = RunMeta(provenance=Provenance(git_commit="0123456789abcdef", git_dirty=True))
    assert reproduce_text(dirty) == (
        "From a checkout at commit `0123456789ab` (the run had uncommitted changes on top of it):"
    )
