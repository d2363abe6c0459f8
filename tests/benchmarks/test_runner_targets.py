"""Several targets (models) in one run (benchmarks/runner.py, benchmarks/suite.py): one results file, each
target with its own engines, model, memory store and prompt cache; and what a run record says of its targets,
old files that predate them included."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.provenance import ModelIdentity, Provenance
from benchmarks.report import write_reports
from benchmarks.report.aggregate import summarize
from benchmarks.report.findings import OFFLINE_NOTICE
from benchmarks.report.markdown import render_markdown
from benchmarks.results import RunMeta, RunResults, read_results
from benchmarks.runner import plan_units, run_suite
from benchmarks.scenario import Scenario
from benchmarks.scoring.turn import TurnScorer
from benchmarks.targets import DEFAULT_TARGET, parse_targets
from shared.turn import TurnResult
from tests.benchmarks.bench_fakes import TARGETS, Engines, config, good_script, run


def test_every_target_runs_every_mode_into_one_results_file(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    factories = {"a": Engines(), "b": Engines()}
    outcome = run(tiny_suite, config(tmp_path, TARGETS, repeat=2), factories, scorer)

    assert len(outcome.rows) == 2 * 2 * 3 * 2  # targets × modes × turns × repetitions
    assert {(r.target, r.mode) for r in outcome.rows} == {
        (t, m) for t in ("a", "b") for m in ("planner", "toolcalling")
    }
    lines = [json.loads(line) for line in outcome.results_path.read_text().splitlines()]
    assert [t["name"] for t in lines[0]["targets"]] == ["a", "b"]
    assert lines[0]["provider"] == "offline" and lines[0]["prompt_cache"] is True
    assert {line["target"] for line in lines[1:]} == {"a", "b"}
    for name, engines in factories.items():  # each target's engines came from its own factory
        assert {e.mode for e in engines.built} == {"planner", "toolcalling"}
        asked = [conversation for conversation, _ in engines.calls()]
        assert set(asked) == {r.conversation_id for r in outcome.rows if r.target == name}
    conversations = [{r.conversation_id for r in outcome.rows if r.target == t} for t in ("a", "b")]
    assert not conversations[0] & conversations[1], "targets never share a conversation"


def test_one_factory_can_serve_every_target(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    engines = Engines()
    outcome = run(tiny_suite, config(tmp_path, TARGETS), engines, scorer)
    assert len(outcome.rows) == 12 and all(r.passed for r in outcome.rows)
    assert sorted(e.mode for e in engines.built) == ["planner", "planner", "toolcalling", "toolcalling"], (
        "one engine per target and mode"
    )


def test_units_are_keyed_by_target_and_targets_sit_side_by_side(tiny_suite: list[Scenario]) -> None:
    units = plan_units(tiny_suite, ["planner"], 1, ["a", "b"])
    assert [u.key for u in units] == [
        ("a", "planner", "ventas", 1),
        ("b", "planner", "ventas", 1),
        ("a", "planner", "saludo", 1),
        ("b", "planner", "saludo", 1),
    ]


def test_each_turn_row_carries_whether_the_plan_was_valid(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    def judged(mode: str, conversation_id: str, message: str) -> TurnResult:
        result = good_script(mode, conversation_id, message)
        return result.model_copy(update={"plan_valid": message != "Hola"})

    outcome = run(tiny_suite, config(tmp_path, TARGETS), {"a": Engines(judged), "b": Engines()}, scorer)
    a = {(r.user, r.plan_valid) for r in outcome.rows if r.target == "a"}
    assert a == {("Hola", False), ("¿Cuánto vendimos en 2025?", True)}
    assert all(r.plan_valid is None for r in outcome.rows if r.target == "b"), "None until engines say"


def test_a_results_file_without_targets_plan_validity_or_first_answer_times_loads_resumes_and_renders(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    first = run(tiny_suite, config(tmp_path), Engines(), scorer)
    old = []
    for line in first.results_path.read_text().splitlines():  # as a runner before targets wrote it
        record = json.loads(line)
        for key in (
            "target",
            "plan_valid",
            "targets",
            "prompt_cache",
            "first_answer_ms",
            "simulated_first_answer_ms",
        ):
            record.pop(key, None)
        old.append(json.dumps(record))
    first.results_path.write_text("\n".join(old) + "\n")

    loaded = read_results(first.results_path)
    assert {
        (r.target, r.plan_valid, r.first_answer_ms, r.simulated_first_answer_ms) for r in loaded.rows
    } == {(DEFAULT_TARGET, None, None, None)}
    assert loaded.meta.targets == [] and loaded.meta.prompt_cache is None
    assert [t.name for t in loaded.meta.run_targets] == [DEFAULT_TARGET] and not loaded.meta.matrix

    text = write_reports(first.results_path).markdown.read_text(encoding="utf-8")
    assert "| mode | turns |" in text and "## Model matrix" not in text, "one target: no grid"
    assert "| planner | 3 |" in text and "| n/a |" in text, "valid plans not recorded"
    assert "prefix cache modelled: not recorded" in text

    engines = Engines()
    again = run(tiny_suite, config(tmp_path, resume=True), engines, scorer)
    assert again.units_run == 0 and engines.calls() == [] and len(again.rows) == 6


def test_run_meta_describes_its_targets() -> None:
    implicit = RunMeta(provider="ollama", model="llama3.1:8b")
    assert [(t.name, t.provider, t.model) for t in implicit.run_targets] == [
        (DEFAULT_TARGET, "ollama", "llama3.1:8b")
    ]
    assert not implicit.offline and not implicit.any_offline
    mixed = RunMeta(targets=parse_targets(["a=offline", "l=ollama"]))
    assert mixed.matrix and not mixed.offline and mixed.any_offline


def test_a_run_against_an_emulator_is_labeled_as_the_stand_in_never_as_a_real_model() -> None:
    emulated = ModelIdentity(
        provider="ollama", model="llama3.1:8b", details={"stand_in": "erp-ai emulator: X"}
    )
    # a run without --target records the one model only
    meta = RunMeta(provider="ollama", model="llama3.1:8b", provenance=Provenance(model=emulated))
    assert meta.offline
    results = RunResults(meta=meta, rows=[])
    assert OFFLINE_NOTICE in render_markdown(results, summarize(results.rows))

    real = ModelIdentity(provider="openai", model="q", details={"id": "q", "owned_by": "llamacpp"})
    meta = RunMeta(provider="openai", model="q", provenance=Provenance(models={DEFAULT_TARGET: real}))
    assert not real.stand_in and not meta.offline


def test_each_target_gets_its_own_model_and_memory_store(
    tmp_path: Path, tiny_suite: list[Scenario], erp_db_url: str, erp: object
) -> None:
    cfg = config(tmp_path, TARGETS, modes=["planner"])
    outcome = run_suite(tiny_suite, cfg, db_url=erp_db_url, show_progress=False)
    assert not any(r.failed for r in outcome.rows), [r.errors for r in outcome.rows]
    assert (cfg.out_dir / "memory-a.sqlite3").exists() and (cfg.out_dir / "memory-b.sqlite3").exists()
    provenance = outcome.meta.provenance
    assert provenance is not None and set(provenance.models) == {"a", "b"}
    assert provenance.models["a"].digest and provenance.models["a"].details["prompt_cache_size"] > 0
    figures = {
        t: [
            (r.scenario, r.turn, r.input_tokens, r.cached_input_tokens) for r in outcome.rows if r.target == t
        ]
        for t in ("a", "b")
    }
    assert figures["a"] == figures["b"], "same model, own prompt cache: neither warms the other's cache"


def test_no_prompt_cache_gives_no_cached_input_tokens(
    tmp_path: Path, tiny_suite: list[Scenario], erp_db_url: str, erp: object
) -> None:
    cached = {}
    for setting in (True, False):
        cfg = config(tmp_path / str(setting), ["a=offline"], modes=["planner"], prompt_cache=setting)
        outcome = run_suite(tiny_suite, cfg, db_url=erp_db_url, show_progress=False)
        cached[setting] = [r.cached_input_tokens for r in outcome.rows]
        assert outcome.meta.prompt_cache is setting
        provenance = outcome.meta.provenance
        assert provenance is not None
        assert provenance.models["a"].details["prompt_cache_size"] == (64 if setting else 0)
    assert any(tokens and tokens > 0 for tokens in cached[True]), "the cache model does hit"
    assert cached[False] == [0] * len(cached[False])
