"""The state a planner turn stores: derived by the ERP from the executed plan, merged with the model's."""

from __future__ import annotations

from typing import Any

from benchmarks.stand_ins import build_model
from benchmarks.stand_ins.offline._prompt import parse_calls
from planner_mode import PlannerAI, PlannerEngine
from shared.erp.database import Erp
from shared.memory.store import MemoryStore
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER
from shared.state import (
    ERP_STATE_KEYS,
    MAX_NAME_CHARS,
    MAX_OPERATIONS,
    MAX_OPERATIONS_CHARS,
    derived_state,
    operation_call,
    turn_state,
)
from shared.turn import ExecutedOperation


def ok(funcion: str, result: Any = None, **parametros: Any) -> ExecutedOperation:
    return ExecutedOperation(funcion=funcion, parametros=parametros, result=result)


def failed(funcion: str, **parametros: Any) -> ExecutedOperation:
    return ExecutedOperation(funcion=funcion, parametros=parametros, error="No existe.", error_kind="refused")


BEST = ok("mejor_cliente", {"anio": 2031, "cliente": "Papelera Orión S.A.", "total": 5}, anio=2031)


def test_year_customer_and_operations_come_from_the_executed_plan() -> None:
    purchases = ok(
        "compras_cliente",
        {"cliente": "Papelera Orión S.A.", "anio": 2031, "total": 5},
        cliente="Papelera Orión S.A.",
        anio=2031,
    )
    assert derived_state([BEST, purchases]) == {
        "anio": 2031,
        "cliente_actual": "Papelera Orión S.A.",
        "ultimas_operaciones": (
            'mejor_cliente(anio=2031); compras_cliente(cliente="Papelera Orión S.A.", anio=2031)'
        ),
    }


def test_the_results_spelling_of_a_name_wins_over_the_parameters() -> None:
    purchases = ok(
        "compras_cliente", {"cliente": "Papelera Orión S.A.", "anio": 2031}, cliente="orion", anio=2031
    )
    assert derived_state([purchases])["cliente_actual"] == "Papelera Orión S.A."


def test_a_later_operation_overrides_an_earlier_one() -> None:
    other = ok("mejor_cliente", {"anio": 2030, "cliente": "Vidriería Boreal"}, anio=2030)
    state = derived_state([BEST, other])
    assert (state["anio"], state["cliente_actual"]) == (2030, "Vidriería Boreal")


def test_failed_operations_say_nothing_and_a_turn_without_success_derives_nothing() -> None:
    assert derived_state([failed("compras_cliente", cliente="Nadie", anio=2031)]) == {}
    state = derived_state([BEST, failed("compras_cliente", cliente="Nadie", anio=2030)])
    assert state["anio"] == 2031 and "Nadie" not in str(state)
    assert state["ultimas_operaciones"] == "mejor_cliente(anio=2031)"


def test_a_result_listing_one_item_names_it() -> None:
    one_match = ok("buscar_cliente", {"texto": "orion", "clientes": [{"nombre": "Papelera Orión S.A."}]})
    assert derived_state([one_match])["cliente_actual"] == "Papelera Orión S.A."
    top_one = ok("top_productos", {"anio": 2031, "productos": [{"producto": "Tinta azul", "total": 3}]})
    assert derived_state([top_one])["producto_actual"] == "Tinta azul"
    two_matches = ok("buscar_cliente", {"clientes": [{"nombre": "A"}, {"nombre": "B"}]})
    assert "cliente_actual" not in derived_state([two_matches])


def test_only_well_typed_values_are_derived() -> None:
    odd = ok("f", {"anio": "2031", "cliente": "  ", "producto": None}, anio=True)
    assert derived_state([odd]) == {"ultimas_operaciones": "f(anio=true)"}


def test_the_erp_wins_for_facts_and_the_model_keeps_what_only_it_knows() -> None:
    model = {"tema": "compras", "anio": 1999, "cliente_actual": "Inventado", "ultimas_operaciones": "x()"}
    update = turn_state({}, [BEST], model)
    assert update == {
        "tema": "compras",
        "anio": 2031,
        "cliente_actual": "Papelera Orión S.A.",
        "ultimas_operaciones": "mejor_cliente(anio=2031)",
    }


def test_without_executed_operations_the_models_state_is_kept_but_never_its_operations() -> None:
    model = {"tema": "charla", "anio": 2030, "ultimas_operaciones": "inventada(x=1)"}
    assert turn_state({"tema": "ventas"}, [], model) == {"tema": "charla", "anio": 2030}
    assert turn_state({"tema": "ventas"}, [], {}) == {}


def test_the_legacy_single_operation_key_is_deleted_once_replaced() -> None:
    update = turn_state({"ultima_operacion": "mejor_cliente"}, [BEST], {})
    assert update["ultima_operacion"] is None
    assert "ultima_operacion" not in turn_state({}, [BEST], {})
    assert turn_state({"ultima_operacion": "mejor_cliente"}, [], {}) == {}


def test_derived_values_are_bounded() -> None:
    many = [ok(f"operacion_{i}", {}, texto="x" * 90) for i in range(10)]
    operations = derived_state(many)["ultimas_operaciones"]
    assert len(operations) <= MAX_OPERATIONS_CHARS
    assert operations.count("operacion_") <= MAX_OPERATIONS
    assert operations.endswith('operacion_9(texto="' + "x" * 90 + '")')  # the last ones are kept
    long_name = ok("mejor_cliente", {"cliente": "N" * 500})
    assert len(derived_state([long_name])["cliente_actual"]) == MAX_NAME_CHARS
    assert set(derived_state([BEST, long_name])) <= set(ERP_STATE_KEYS)


def test_the_model_reads_back_the_operations_the_erp_wrote() -> None:
    """The offline model (which reads only messages) understands the call notation the ERP stores."""
    text = derived_state(
        [
            BEST,
            ok("buscar_cliente", {}, texto='Orión "Norte", S.A. (sucursal)'),
            ok("facturas_pendientes", {}),
        ]
    )["ultimas_operaciones"]
    assert parse_calls(text) == [
        ("mejor_cliente", {"anio": 2031}),
        ("buscar_cliente", {"texto": 'Orión "Norte", S.A. (sucursal)'}),
        ("facturas_pendientes", {}),
    ]
    assert operation_call("f", {"a": [1, 2], "b": None}) == "f(a=[1, 2], b=null)"


def test_the_state_the_model_no_longer_writes_is_still_there_for_the_next_turn(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    """The offline model writes only ``tema``; the ERP adds the customer, so "¿y cuánto compró?" resolves."""
    engine = PlannerEngine(registry, erp, memory_store, PlannerAI(build_model("offline")))
    first = engine.ask("c", "¿Cuál fue el mejor cliente de 2024?", DEMO_CALLER)
    customer = first.operations[0].result["cliente"]
    assert first.state == {
        "tema": "ventas",
        "anio": 2024,
        "cliente_actual": customer,
        "ultimas_operaciones": "mejor_cliente(anio=2024)",
    }
    second = engine.ask("c", "¿Y cuánto compró?", DEMO_CALLER)
    assert [(op.function, op.parameters) for op in second.operations] == [
        ("compras_cliente", {"cliente": customer, "anio": 2024})
    ]
    stored = memory_store.get_state("c")["ultimas_operaciones"]
    assert parse_calls(stored) == [("compras_cliente", {"cliente": customer, "anio": 2024})]
