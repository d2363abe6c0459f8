"""The :class:`~shared.engine.AssistantEngine` contract on the caller, pinned on both engines: a turn always
names who asks. Forgetting the caller is a ``TypeError`` (never a turn run as the demo manager), and so is
passing something that is not a :class:`~shared.security.Caller`; either way no model is called and nothing
is written."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from planner_mode import PlannerAI, PlannerEngine
from shared.engine import AssistantEngine
from shared.erp.database import DEMO_TODAY, Erp
from shared.memory.store import MemoryStore
from shared.security import DEMO_CALLER
from tests.fakes import FunctionChatModel
from tests.planner_mode.planner_fakes import text_model
from tests.toolcalling_mode.toolcalling_fakes import toy_registry
from toolcalling_mode import ToolCallingEngine

ENTRY_POINTS = ("ask", "aask", "astream")
QUESTION = "¿Cuánto vendimos en 2025?"


def _planner(erp: Erp, store: MemoryStore) -> tuple[AssistantEngine, FunctionChatModel]:
    model = text_model(lambda messages, info: json.dumps({"respuesta_directa": "Hola."}))
    return PlannerEngine(toy_registry(), erp, store, PlannerAI(model)), model


def _toolcalling(erp: Erp, store: MemoryStore) -> tuple[AssistantEngine, FunctionChatModel]:
    model = FunctionChatModel(lambda messages, info: "Hola.")
    return ToolCallingEngine(toy_registry(), erp, store, model), model


BUILDERS: dict[str, Callable[[Erp, MemoryStore], tuple[AssistantEngine, FunctionChatModel]]] = {
    "planner": _planner,
    "toolcalling": _toolcalling,
}


@pytest.fixture(params=BUILDERS)
def built(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Any, FunctionChatModel, MemoryStore]]:
    """``(engine, model, store)`` of one mode over the toy registry; its model only ever says hello."""
    erp_engine = create_engine("sqlite://")
    store = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    engine, model = BUILDERS[request.param](Erp(erp_engine, today=DEMO_TODAY), store)
    yield engine, model, store
    store.close()
    erp_engine.dispose()


@pytest.mark.parametrize("engine_class", [AssistantEngine, PlannerEngine, ToolCallingEngine])
@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_caller_is_the_third_parameter_and_has_no_default(engine_class: type, entry_point: str) -> None:
    parameters = list(inspect.signature(getattr(engine_class, entry_point)).parameters.values())
    assert [p.name for p in parameters[:4]] == ["self", "conversation_id", "message", "caller"]
    assert parameters[3].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert parameters[3].default is inspect.Parameter.empty


NOT_CALLERS = {
    "no caller": (),
    "a user id": ("ana",),
    "None": (None,),
    "a dict": ({"user_id": "ana", "roles": ["ventas"]},),
}


@pytest.mark.parametrize("wrong", NOT_CALLERS.values(), ids=NOT_CALLERS.keys())
async def test_a_turn_without_a_caller_is_refused_before_any_model_call_or_write(
    built: Any, wrong: tuple[object, ...]
) -> None:
    engine, model, store = built
    expected = r"caller must be a shared\.security\.Caller .* not .*DEMO_CALLER" if wrong else "caller"

    with pytest.raises(TypeError, match=expected):
        engine.ask("c1", QUESTION, *wrong)
    with pytest.raises(TypeError, match=expected):
        await engine.aask("c1", QUESTION, *wrong)
    with pytest.raises(TypeError, match=expected):  # an async generator: refused before its first event
        await anext(engine.astream("c1", QUESTION, *wrong))

    assert model.call_count == 0 and store.get_conversation("c1") is None
    assert (await engine.aask("c1", QUESTION, DEMO_CALLER)).recorded  # the same call naming its caller runs
