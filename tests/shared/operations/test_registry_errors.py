"""Unexpected operation failures: ``error interno (ref XXXX)`` for the model and the user, details logged."""

from __future__ import annotations

import logging
import re

import pytest
from langchain_core.messages import ToolMessage
from pydantic import BaseModel, Field
from sqlalchemy.exc import DatabaseError
from sqlalchemy.orm import Session

from shared.erp.database import Erp
from shared.errors import DomainError, OperationInternalError
from shared.operations.registry import Operation, OperationRegistry, internal_error
from shared.security import DEMO_CALLER

SQL = "SELECT secret FROM invoices WHERE customer_ruc = ?"
PARAMS = ("80000001-3",)


class Params(BaseModel):
    anio: int = Field(description="Año calendario.")


class Result(BaseModel):
    total: int


def _corrupt_page(session: Session, params: Params) -> Result:
    raise DatabaseError(SQL, PARAMS, Exception("database disk image is malformed"))


def _refused(session: Session, params: Params) -> Result:
    raise DomainError("ventas_rechazadas", f"No hay ventas registradas para {params.anio}.")


def _bug(session: Session, params: Params) -> Result:
    raise KeyError("total")


@pytest.fixture
def broken_registry() -> OperationRegistry:
    return OperationRegistry(
        [
            Operation("ventas_corruptas", "Ventas (página corrupta).", Params, Result, _corrupt_page),
            Operation("ventas_rechazadas", "Ventas (rechazo esperado).", Params, Result, _refused),
            Operation("ventas_con_error", "Ventas (error de programación).", Params, Result, _bug),
        ]
    )


def test_a_database_error_becomes_an_internal_error_without_sql_logged_under_its_own_reference(
    broken_registry: OperationRegistry, erp: Erp, caplog: pytest.LogCaptureFixture
) -> None:
    references = set()
    for _ in range(3):
        caplog.clear()
        with (
            caplog.at_level(logging.ERROR, logger="shared.operations"),
            pytest.raises(OperationInternalError) as raised,
        ):
            broken_registry.execute(erp, "ventas_corruptas", {"anio": 2025}, caller=DEMO_CALLER)
        error = raised.value
        assert str(error) == f"error interno (ref {error.reference})"
        # hex, starting with a letter: never read as a number (8219e736 would be 8219·10⁷³⁶)
        assert re.fullmatch(r"[a-f][0-9a-f]{7}", error.reference) and error.operation == "ventas_corruptas"
        assert "SELECT" not in str(error) and "80000001-3" not in str(error)
        [record] = [r for r in caplog.records if r.name == "shared.operations"]
        assert record.levelno == logging.ERROR and error.reference in record.getMessage()
        assert record.exc_info is not None and isinstance(record.exc_info[1], DatabaseError)
        assert SQL in caplog.text and "database disk image is malformed" in caplog.text
        references.add(error.reference)
    assert len(references) == 3  # each failure gets its own


def test_only_unexpected_errors_become_internal_expected_refusals_keep_their_message(
    broken_registry: OperationRegistry, erp: Erp
) -> None:
    with pytest.raises(DomainError, match="No hay ventas registradas para 2025") as refused:
        broken_registry.execute(erp, "ventas_rechazadas", {"anio": 2025}, caller=DEMO_CALLER)
    assert not isinstance(refused.value, OperationInternalError)
    with pytest.raises(OperationInternalError, match=r"^error interno \(ref [0-9a-f]{8}\)$"):
        broken_registry.execute(erp, "ventas_con_error", {"anio": 2025}, caller=DEMO_CALLER)


def test_the_tool_answers_the_model_with_the_reference_only(
    broken_registry: OperationRegistry, erp: Erp, caplog: pytest.LogCaptureFixture
) -> None:
    tool = next(
        t for t in broken_registry.langchain_tools(erp, caller=DEMO_CALLER) if t.name == "ventas_corruptas"
    )
    call = {"type": "tool_call", "id": "call-1", "name": "ventas_corruptas", "args": {"anio": 2025}}
    with caplog.at_level(logging.ERROR, logger="shared.operations"):
        message = tool.invoke(call)
    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    match = re.fullmatch(r"error interno \(ref ([0-9a-f]{8})\)", str(message.content))
    assert match, message.content
    assert match.group(1) in caplog.text and SQL in caplog.text


def test_internal_error_logs_any_exception_for_callers_that_catch_it_themselves(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="shared.operations"):
        error = internal_error("ventas_anuales", DatabaseError(SQL, PARAMS, Exception("disk I/O error")))
    assert isinstance(error, OperationInternalError)
    assert str(error) == f"error interno (ref {error.reference})"
    assert error.reference in caplog.text and SQL in caplog.text and "disk I/O error" in caplog.text
