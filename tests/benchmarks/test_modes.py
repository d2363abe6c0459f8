"""Each mode's engine is built over the same pieces (benchmarks/modes.py)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.modes import ALL_MODES, build_engine, parse_modes
from benchmarks.stand_ins import build_model
from shared.errors import ConfigurationError
from shared.security import DEMO_CALLER


def test_modes_parse_from_a_comma_list() -> None:
    assert parse_modes("planner, toolcalling-full,planner") == ["planner", "toolcalling-full"]
    assert parse_modes(",".join(ALL_MODES)) == list(ALL_MODES)
    with pytest.raises(ConfigurationError, match="toolcaling"):
        parse_modes("planner,toolcaling")
    with pytest.raises(ConfigurationError):
        parse_modes(" , ")


@pytest.mark.parametrize("mode", ALL_MODES)
def test_every_mode_builds_an_engine_that_reports_its_name_and_stores_state(
    mode: str, registry: Any, erp: Any, memory_store: Any
) -> None:
    engine = build_engine(mode, registry=registry, erp=erp, store=memory_store, model=build_model("offline"))
    assert engine.mode == mode
    result = engine.ask("conv-modes", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    assert result.mode == mode and "850.000.000" in result.answer
    result = engine.ask("conv-modes", "¿Cuál fue nuestro mejor cliente en 2025?", DEMO_CALLER)
    assert result.state["cliente_actual"] == "Empresa ABC"  # what a scenario's state expectation checks
    assert memory_store.get_state("conv-modes") == result.state


def test_an_unknown_mode_is_a_configuration_error(registry: Any, erp: Any, memory_store: Any) -> None:
    with pytest.raises(ConfigurationError):
        build_engine("agent", registry=registry, erp=erp, store=memory_store, model=build_model())
