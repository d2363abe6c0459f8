"""The runner with several targets (models): one results file, units keyed by target, resume, old files
(benchmarks/runner.py, benchmarks/results.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.report import write_reports
from benchmarks.results import RunMeta, read_results
from benchmarks.runner import RunConfig, RunOutcome, plan_units, run_benchmark, run_suite
from benchmarks.scenario import Scenario
from benchmarks.scoring.turn import TurnScorer
from benchmarks.targets import DEFAULT_TARGET, parse_targets
from shared.errors import ConfigurationError
from shared.turn import TurnResult
from tests.benchmarks.bench_fakes import Engines, FakeEngine, good_script

TARGETS = ["a=offline", "b=offline:offline-sales"]


def config(tmp_path: Path, specs: list[str] = TARGETS, **kwargs: object) -> RunConfig:
    values: dict[str, object] = {
        "modes": ["planner", "toolcalling"],
        "out_dir": tmp_path / "out",
        "targets": parse_targets(specs),
    }
    values.update(kwargs)
    return RunConfig.model_validate(values)


def run(
    suite: list[Scenario], cfg: RunConfig, factories: dict[str, Engines], scorer: TurnScorer
) -> RunOutcome:
    return run_benchmark(suite, cfg, engine_factory=factories, scorer=scorer, show_progress=False)


def test_every_target_runs_every_mode_into_one_results_file(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    factories = {"a": Engines(), "b": Engines()}
    outcome = run(tiny_suite, config(tmp_path, repeat=2), factories, scorer)

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
        theirs = {r.conversation_id for r in outcome.rows if r.target == name}
        assert set(asked) == theirs
    conversations = [{r.conversation_id for r in outcome.rows if r.target == t} for t in ("a", "b")]
    assert not conversations[0] & conversations[1], "targets never share a conversation"


def test_a_target_without_a_factory_fails_its_turns_only(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    outcome = run(tiny_suite, config(tmp_path), {"a": Engines()}, scorer)
    assert all(r.passed for r in outcome.rows if r.target == "a")
    missing = [r for r in outcome.rows if r.target == "b"]
    assert missing and all(r.failed for r in missing)
    assert "No engine factory for target 'b'" in missing[0].errors[0]


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

    outcome = run(tiny_suite, config(tmp_path), {"a": Engines(judged), "b": Engines()}, scorer)
    a = {(r.user, r.plan_valid) for r in outcome.rows if r.target == "a"}
    assert a == {("Hola", False), ("¿Cuánto vendimos en 2025?", True)}
    assert all(r.plan_valid is None for r in outcome.rows if r.target == "b"), "None until engines say"


def test_resume_with_targets_reruns_only_the_unfinished_unit(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    first = run(tiny_suite, config(tmp_path), {"a": Engines(), "b": Engines()}, scorer)
    lines = first.results_path.read_text().splitlines()
    last = json.loads(lines[-1])
    assert (last["target"], last["mode"], last["scenario"], last["turn"]) == ("b", "toolcalling", "saludo", 2)
    first.results_path.write_text("\n".join(lines[:-1]) + "\n")

    factories = {"a": Engines(), "b": Engines()}
    second = run(tiny_suite, config(tmp_path, resume=True), factories, scorer)
    assert (second.units_run, second.units_skipped) == (1, 7)
    assert factories["a"].calls() == []
    assert [(e.mode, m) for e in factories["b"].built for _, m in e.calls] == [
        ("toolcalling", "Hola"),
        ("toolcalling", "¿Cuánto vendimos en 2025?"),
    ]
    rows = read_results(second.results_path).rows
    assert len(rows) == 12 == len({(r.unit, r.turn) for r in rows})


def test_resume_refuses_a_target_name_that_now_stands_for_another_model(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    run(tiny_suite, config(tmp_path), {"a": Engines(), "b": Engines()}, scorer)
    changed = config(tmp_path, ["a=offline", "b=ollama:llama3.1:8b"], resume=True)
    with pytest.raises(ConfigurationError, match=r"target b: provider 'offline' → 'ollama'"):
        run(tiny_suite, changed, {"a": Engines(), "b": Engines()}, scorer)
    uncached = config(tmp_path, resume=True, prompt_cache=False)
    with pytest.raises(ConfigurationError, match="prompt_cache True → False"):
        run(tiny_suite, uncached, {"a": Engines(), "b": Engines()}, scorer)


def test_resume_keeps_the_targets_both_runs_have_and_adds_the_new_one(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    run(tiny_suite, config(tmp_path, ["a=offline"]), {"a": Engines()}, scorer)
    factories = {"a": Engines(), "c": Engines()}
    again = run(tiny_suite, config(tmp_path, ["a=offline", "c=offline"], resume=True), factories, scorer)
    assert factories["a"].calls() == [] and len(factories["c"].calls()) == 6
    assert {r.target for r in again.rows} == {"a", "c"}


def test_target_names_must_be_unique_in_the_config(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="target names must be unique"):
        RunConfig(
            modes=["planner"],
            out_dir=tmp_path,
            targets=[*parse_targets(["a=offline"]), *parse_targets(["a=ollama"])],
        )


def test_a_results_file_without_targets_plan_validity_or_first_answer_times_loads_resumes_and_renders(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    out = tmp_path / "out"
    first = run_benchmark(
        tiny_suite,
        RunConfig(modes=["planner", "toolcalling"], out_dir=out),
        engine_factory=Engines(),
        scorer=scorer,
        show_progress=False,
    )
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

    files = write_reports(first.results_path)
    text = files.markdown.read_text(encoding="utf-8")
    assert "| mode | turns |" in text and "## Model matrix" not in text, "one target: no grid"
    assert "| planner | 3 |" in text and "| n/a |" in text, "valid plans not recorded"
    assert "prefix cache modelled: not recorded" in text

    engines = Engines()
    again = run_benchmark(
        tiny_suite,
        RunConfig(modes=["planner", "toolcalling"], out_dir=out, resume=True),
        engine_factory=engines,
        scorer=scorer,
        show_progress=False,
    )
    assert again.units_run == 0 and engines.calls() == [] and len(again.rows) == 6


def test_run_meta_describes_its_targets() -> None:
    implicit = RunMeta(provider="ollama", model="llama3.1:8b")
    assert [(t.name, t.provider, t.model) for t in implicit.run_targets] == [
        (DEFAULT_TARGET, "ollama", "llama3.1:8b")
    ]
    assert not implicit.offline and not implicit.any_offline
    mixed = RunMeta(targets=parse_targets(["a=offline", "l=ollama"]))
    assert mixed.matrix and not mixed.offline and mixed.any_offline


def test_each_target_gets_its_own_model_and_memory_store(
    tmp_path: Path, tiny_suite: list[Scenario], erp_db_url: str, erp: object
) -> None:
    cfg = config(tmp_path, modes=["planner"])
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
        assert provenance is not None and provenance.models["a"].details["prompt_cache_size"] == (
            64 if setting else 0
        )
    assert any(tokens and tokens > 0 for tokens in cached[True]), "the cache model does hit"
    assert cached[False] == [0] * len(cached[False])


def test_offline_only_settings_need_an_offline_target(tmp_path: Path, tiny_suite: list[Scenario]) -> None:
    with pytest.raises(ConfigurationError, match="Latency profiles only apply to the offline provider"):
        run_suite(tiny_suite, config(tmp_path, ["l=ollama"], latency_profile="gpu-8b"), show_progress=False)
    with pytest.raises(ConfigurationError, match="--no-prompt-cache only applies to the offline provider"):
        run_suite(tiny_suite, config(tmp_path, ["l=ollama"], prompt_cache=False), show_progress=False)


def test_a_fake_engine_can_serve_every_target(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    built: list[str] = []

    def factory(mode: str) -> FakeEngine:
        built.append(mode)
        return FakeEngine(mode, good_script)

    outcome = run_benchmark(
        tiny_suite, config(tmp_path), engine_factory=factory, scorer=scorer, show_progress=False
    )
    assert len(outcome.rows) == 12 and all(r.passed for r in outcome.rows)
    assert sorted(built) == ["planner", "planner", "toolcalling", "toolcalling"], (
        "one engine per target and mode"
    )
