"""benchmarks.cost: USD per 1,000 turns per mode from a run's tokens and the pricing table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.cost import ModelPrice, PricingTable, estimate_cost, load_pricing
from benchmarks.results import RunMeta, RunResults, TurnRow
from shared.errors import ConfigurationError
from tests.benchmarks.report.sample_results import turn_row


def _row(mode: str, turn: int, input_tokens: int, output_tokens: int, **extra: Any) -> TurnRow:
    return turn_row(mode, turn=turn, input_tokens=input_tokens, output_tokens=output_tokens, **extra)


def _results(provider: str, model: str | None = None, base_url: str | None = None) -> RunResults:
    rows = [
        _row("planner", 1, 1000, 100),
        _row("planner", 2, 3000, 300),
        _row("toolcalling", 1, 4000, 50),
        _row("toolcalling", 2, 4000, 50, warmup=True),  # left out
        _row("toolcalling", 3, 2000, 50),
    ]
    meta = RunMeta(provider=provider, model=model, base_url=base_url, modes=["planner", "toolcalling"])
    return RunResults(meta=meta, rows=rows)


def test_the_packaged_table_dates_and_sources_every_price() -> None:
    table = load_pricing()
    assert {"gpt-4o-mini", "gemini-2.5-flash"} <= set(table.models)
    for name, price in table.models.items():
        assert price.source.startswith("https://"), name
        assert price.as_of, name
        assert price.output >= price.input > 0, name
        assert price.cached_input is None or price.cached_input <= price.input, name


def test_cost_per_1000_turns_from_token_means() -> None:
    estimate = estimate_cost(_results("openai", "gpt-4o-mini"))
    planner, tools = estimate.modes
    # planner: mean 2000 input, 200 output tokens → (2000 · 0.15 + 200 · 0.60) / 1e6 · 1000 = 0.42
    assert planner.usd_per_1000_turns == pytest.approx(0.42)
    # toolcalling (warm-up left out): mean 3000 input, 50 output → (450 + 30) / 1000 = 0.48
    assert tools.turns == 2 and tools.usd_per_1000_turns == pytest.approx(0.48)
    assert "openai.com" in estimate.note and "2025-06" in estimate.note
    assert estimate.priced_as == "gpt-4o-mini" and not estimate.local


def test_cached_input_tokens_are_priced_at_the_cached_rate() -> None:
    results = _results("openai", "gpt-4o-mini")
    results.rows[0].__dict__["cached_input_tokens"] = 1000  # a row from a runner that records cache hits
    results.rows[1].__dict__["cached_input_tokens"] = 1000
    planner = estimate_cost(results).modes[0]
    # 1000 of 2000 input tokens cached: (1000 · 0.15 + 1000 · 0.075 + 200 · 0.60) / 1000 = 0.345
    assert planner.cached_input_tokens_mean == 1000
    assert planner.usd_per_1000_turns == pytest.approx(0.345)


def test_a_dated_snapshot_uses_its_models_price_and_no_model_the_providers_default() -> None:
    estimate = estimate_cost(_results("openai", "gpt-4o-mini-2024-07-18"))
    assert estimate.priced_as == "gpt-4o-mini"
    assert "priced as gpt-4o-mini" in estimate.note
    assert estimate_cost(_results("gemini")).priced_as == "gemini-2.5-flash"


@pytest.mark.parametrize(
    ("provider", "model", "base_url"),
    [
        ("offline", None, None),
        ("ollama", "qwen2.5:7b", "http://gpu-box:11434"),
        ("openai", "qwen2.5-7b.gguf", "http://127.0.0.1:8080/v1"),
        ("openai", "gpt-4o-mini", "http://localhost:8080/v1"),
        ("gemini", "gemini-2.5-flash", "http://[::1]:8089"),
    ],
)
def test_local_models_cost_nothing_with_a_note(
    provider: str, model: str | None, base_url: str | None
) -> None:
    estimate = estimate_cost(_results(provider, model, base_url))
    assert estimate.local
    assert all(mode.usd_per_1000_turns == 0 for mode in estimate.modes)
    assert "local model" in estimate.note


def test_a_hosted_model_without_a_price_has_no_figure_and_says_where_to_add_one() -> None:
    estimate = estimate_cost(_results("openai", "some-new-model", "https://api.example.com/v1"))
    assert all(mode.usd_per_1000_turns is None for mode in estimate.modes)
    assert "some-new-model" in estimate.note and "--pricing" in estimate.note


def test_a_user_file_replaces_and_adds_entries(tmp_path: Path) -> None:
    override = tmp_path / "prices.yaml"
    override.write_text(
        "models:\n"
        "  gpt-4o-mini: {input: 1.0, output: 2.0, source: 'our contract', as_of: 2026-01}\n"
        "  my-model: {input: 0.5, output: 0.5, source: 'our contract', as_of: 2026-01}\n",
        encoding="utf-8",
    )
    table = load_pricing(override)
    assert table.models["gpt-4o-mini"] == ModelPrice(
        input=1.0, output=2.0, source="our contract", as_of="2026-01"
    )
    assert "my-model" in table.models and "gemini-2.5-flash" in table.models
    assert table.local == load_pricing().local
    planner = estimate_cost(_results("openai", "gpt-4o-mini"), table).modes[0]
    # no cached price: (2000 · 1.0 + 200 · 2.0) / 1000 = 2.4
    assert planner.usd_per_1000_turns == pytest.approx(2.4)


def test_a_broken_pricing_file_is_a_configuration_error(tmp_path: Path) -> None:
    broken = tmp_path / "prices.yaml"
    broken.write_text("models:\n  x: {input: -1, output: 1, source: s, as_of: d}\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"prices\.yaml"):
        load_pricing(broken)
    with pytest.raises(ConfigurationError, match="Cannot read"):
        load_pricing(tmp_path / "missing.yaml")


def test_what_is_local_reads_hosts_not_substrings_and_a_user_file_can_change_it(tmp_path: Path) -> None:
    override = tmp_path / "prices.yaml"
    override.write_text("local: {providers: [offline], hosts: []}\n", encoding="utf-8")
    assert not load_pricing(override).is_local("ollama", None)
    table = PricingTable.model_validate({"local": {"providers": [], "hosts": ["localhost"]}})
    assert table.is_local("openai", "http://localhost:8080/v1")
    assert not table.is_local("openai", "https://localhost.example.com/v1")
    assert not table.is_local("openai", None)
