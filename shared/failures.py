"""The one failure contract of both modes: how a turn can fail, what is recorded, what the user reads.

A turn succeeds or ends in exactly one :data:`FailureKind` (``docs/failures.md`` is this module as a table).
It is recorded only when a model wrote its final answer (success, ``invalid_plan``, ``operation_error``); any
other failure leaves the conversation untouched, so the user can simply ask again.
"""

from __future__ import annotations

from typing import Literal, get_args

from shared.errors import (
    InputError,
    ModelOutputError,
    OperationError,
    OperationInternalError,
    OutputLimitError,
    ProviderTimeoutError,
    StorageError,
    TurnLimitError,
)

FailureKind = Literal[
    "provider",
    "timeout",
    "model_output",
    "invalid_plan",
    "operation_error",
    "ungrounded",
    "limit",
    "storage",
    "input",
]
"""Why a turn could not be answered normally (see :data:`DESCRIPTIONS`)."""

FAILURE_KINDS: tuple[FailureKind, ...] = get_args(FailureKind)

RECORDED_FAILURES: frozenset[FailureKind] = frozenset({"invalid_plan", "operation_error", "ungrounded"})
"""Failures whose turn is still recorded: a model wrote the answer that explains them, or (``ungrounded``)
the user read the ERP's refusal and rendering instead, which is what the conversation keeps, with the state
the executed operations imply and no model memory, so a follow-up keeps its referent."""

DESCRIPTIONS: dict[FailureKind, str] = {
    "provider": "The model provider failed: connection refused, HTTP error, SDK error, a dead AI server.",
    "timeout": "A model request did not finish within the request timeout.",
    "model_output": (
        "The model's output was unusable: not JSON, not the schema (e.g. a plan without `operaciones`), "
        "empty, cut at the max_tokens cap, or longer than the cap can hold (32 characters a token: a server "
        "that ignores max_tokens; reading stops there, before any check)."
    ),
    "invalid_plan": (
        "The model asked for operations the ERP refused as invalid (unknown operation, invalid parameters, "
        "a `$ref` to nothing, too many operations) and nothing ran."
    ),
    "operation_error": "An operation failed unexpectedly inside the ERP (`error interno (ref XXXX)`).",
    "ungrounded": (
        "The model's answer stated figures that no operation result, question, context or date supports, or "
        "said of another year, customer or product (:mod:`shared.grounding`), or claimed the ERP did "
        "something no operation did (sent, changed, deleted, registered, executed: :mod:`shared.actions`), "
        "so it is not shown as the ERP's truth (grounding policy `refuse`)."
    ),
    "limit": "A per-turn bound stopped the turn: model calls, operations asked for or agent steps.",
    "storage": "The ERP database or the memory store could not be read or written.",
    "input": (
        "The caller's input was refused before any model call: conversation id, empty or oversized question."
    ),
}

_MESSAGES: dict[FailureKind, str] = {
    "provider": (
        "Lo siento, el servicio de IA no está disponible en este momento. Intente de nuevo en unos minutos."
    ),
    "timeout": (
        "Lo siento, el modelo de IA tardó demasiado en responder y cancelé la consulta. "
        "Intente de nuevo en unos minutos."
    ),
    "model_output": (
        "Lo siento, no pude interpretar la respuesta del modelo de IA; no se guardó nada. "
        "¿Puede intentarlo de nuevo o reformular la pregunta?"
    ),
    "invalid_plan": (
        "Lo siento, el modelo pidió operaciones que el ERP no reconoce o no acepta; no se ejecutó ninguna. "
        "¿Puede reformular la pregunta?"
    ),
    "operation_error": (
        "Lo siento, una consulta del ERP falló por un error interno. Intente de nuevo más tarde."
    ),
    "ungrounded": (
        "Lo siento, la respuesta del modelo citaba cifras que el ERP no puede confirmar, así que no la "
        "muestro ni la guardo. ¿Puede intentarlo de nuevo?"
    ),
    "limit": (
        "Lo siento, la consulta alcanzó el límite de pasos por turno y no pude completarla. "
        "Intente con una pregunta más concreta."
    ),
    "storage": (
        "Lo siento, no pude acceder a la memoria de la conversación en el ERP; no se guardó nada. "
        "Intente de nuevo más tarde."
    ),
    "input": (
        "No pude procesar el mensaje: la pregunta no puede estar vacía ni superar los 4000 caracteres, y la "
        "conversación debe ser una suya. Revise el mensaje e intente de nuevo."
    ),
}
NOT_RECORDED_NOTE = "(No pude guardar este intercambio en la memoria de la conversación.)"
"""Appended, in both modes, to a model-written answer that the store failed to record (kind ``storage``)."""

_CUT_MESSAGE = (
    "Lo siento, la respuesta del modelo se cortó al llegar al límite de {limit} y no pude usarla; no se "
    "guardó nada. Intente con una pregunta más concreta."
)


_KINDS_OF_ERRORS: tuple[tuple[type[BaseException], FailureKind], ...] = (
    (OperationInternalError, "operation_error"),
    (ProviderTimeoutError, "timeout"),
    (ModelOutputError, "model_output"),
    (StorageError, "storage"),
    (TurnLimitError, "limit"),
    (InputError, "input"),
    (OperationError, "invalid_plan"),
)
"""The first class an error is an instance of gives its kind (subclasses come before their bases)."""


def failure_kind_of(error: BaseException) -> FailureKind:
    """The failure kind of an exception a turn ended on; anything unknown counts as a provider failure."""
    return next((kind for cls, kind in _KINDS_OF_ERRORS if isinstance(error, cls)), "provider")


def is_recorded(failure: FailureKind | None) -> bool:
    """Whether a turn that ended in ``failure`` is recorded in the conversation (the policy above)."""
    return failure is None or failure in RECORDED_FAILURES


def user_message(kind: FailureKind, error: BaseException | None = None) -> str:
    """What the user reads when a turn ends in ``kind`` with no model-written answer."""
    if isinstance(error, OutputLimitError):
        limit = f"{error.max_tokens} tokens" if error.max_tokens is not None else "tokens de salida"
        return _CUT_MESSAGE.format(limit=limit)
    return _MESSAGES[kind]


def markdown_table() -> str:
    """The contract as the Markdown table of ``docs/failures.md`` (a test keeps the two identical)."""
    lines = [
        "| kind | what happened | recorded in the conversation | what the user is told |",
        "|---|---|---|---|",
    ]
    for kind in FAILURE_KINDS:
        recorded = (
            "yes: a model wrote the answer that explains it" if kind in RECORDED_FAILURES else "no: untouched"
        )
        told = (
            "the model's own answer (call 2 / final agent message), which explains the refusal or error"
            if kind in RECORDED_FAILURES
            else f"“{_MESSAGES[kind]}”"
        )
        if kind == "ungrounded":
            recorded = (
                "yes: the exchange the user read (the refusal and the ERP's rendering), the state the "
                "executed operations imply, no model memory"
            )
            told = "why the answer was refused"
        if kind == "model_output":
            told += f"; a reply cut at the cap: “{_CUT_MESSAGE.format(limit='N tokens')}”"
        if kind == "ungrounded":
            told += (
                " (the figures it named, or the action it claimed) and, when operations ran, the ERP's own "
                "results"
            )
        if kind == "storage":
            told += f"; after the model answered: the answer, then “{NOT_RECORDED_NOTE}”"
        lines.append(f"| `{kind}` | {DESCRIPTIONS[kind]} | {recorded} | {told} |")
    return "\n".join(lines)
