"""The failure contract: one classification, one recording policy and one user message per kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.errors import (
    InputError,
    ModelOutputError,
    OperationInternalError,
    OutputLimitError,
    ProviderError,
    ProviderTimeoutError,
    StorageError,
    UnknownOperationError,
)
from shared.failures import FAILURE_KINDS, failure_kind_of, is_recorded, markdown_table, user_message

DOC = Path(__file__).resolve().parents[2] / "docs" / "failures.md"


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (ProviderError("HTTP 503"), "provider"),
        (ProviderTimeoutError("no answer in 120 s", 120.0), "timeout"),
        (ModelOutputError("not JSON"), "model_output"),
        (OutputLimitError(1024), "model_output"),
        (StorageError("database is locked"), "storage"),
        (InputError("empty question"), "input"),
        (UnknownOperationError("nombre_de_operacion", ["ventas_anuales"]), "invalid_plan"),
        (OperationInternalError("ventas_anuales", "ab12cd34"), "operation_error"),
        (RuntimeError("an SDK bug"), "provider"),
    ],
)
def test_every_error_of_the_tree_maps_to_one_failure_kind(error: BaseException, kind: str) -> None:
    assert failure_kind_of(error) == kind


def test_only_turns_a_model_answered_or_the_erp_refused_to_show_are_recorded() -> None:
    assert is_recorded(None)
    recorded = {kind for kind in FAILURE_KINDS if is_recorded(kind)}
    assert recorded == {"invalid_plan", "operation_error", "ungrounded"}


def test_a_cut_answer_tells_the_user_at_how_many_tokens_it_was_cut() -> None:
    message = user_message("model_output", OutputLimitError(256))
    assert "256 tokens" in message
    assert "256" not in user_message("model_output", ModelOutputError("not JSON"))


def test_every_kind_has_a_spanish_message_without_placeholders() -> None:
    for kind in FAILURE_KINDS:
        message = user_message(kind, InputError("la pregunta está vacía") if kind == "input" else None)
        assert message.startswith(("Lo siento", "No pude")) and "{" not in message


def test_the_docs_table_is_the_contract() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("<!-- FAILURE-TABLE:START")
    block = text[text.index("\n", start) + 1 : text.index("<!-- FAILURE-TABLE:END")]
    assert block.strip() == markdown_table()
