"""Fault injection for reliability tests: the offline model misbehaves as real models and providers do.

A :class:`FaultConfig` picks one :data:`FaultMode` and how often it strikes: call ``n`` (numbered per model)
is faulty when ``Random(f"{seed}:{n}").random() < rate``, the same on every run. A *plan request* is planner
call 1, an *answer request* call 2 or a structured final answer.

- ``malformed_json`` / ``truncated_json``: JSON text (plan, answer, tool-call arguments) is invalid / cut in
  the middle, as at an output limit; broken tool-call arguments stay balanced (:func:`break_arguments`).
- ``unknown_function``: a plan or tool call names an operation that does not exist.
- ``wrong_types``: parameters of the wrong JSON type, e.g. ``"anio": "dos mil veinticinco"``.
- ``empty``: no content and no tool calls.
- ``provider_error`` / ``timeout``: the call raises :class:`OfflineProviderError` /
  :class:`OfflineProviderTimeout`.
- ``runaway``: the model never stops (a plan repeats its first operation, an answer its first memory item,
  a tool step its calls, a text itself) until the cap (``max_tokens``, else :data:`RUNAWAY_CONTEXT_TOKENS`)
  cuts it with ``finish_reason="length"``.
- ``repeat_memory``: a valid answer whose ``memoria`` repeats one item :data:`REPEATED_MEMORY_ITEMS` times
  and whose ``estado`` gains a ``detalle`` of :data:`WALL_OF_TEXT_CHARS` characters.
- ``placeholder_plan``: a plan copies the prompt's placeholders (:func:`placeholder_plan`).
- ``schema_ignored``: valid JSON that ignores the schema: a plan request gets ``{"respuesta": …}`` on even
  call indexes and ``{}`` on odd ones, an answer request ``{}``.
- ``no_tool_calls``: with tools bound, prose with an invented figure instead of a tool call.
- ``text_tool_calls``: with tools bound, each call written as a fenced JSON block ``{"name", "arguments"}``.
- ``think_wrap``: the reply starts with a reasoning model's ``<think>…</think>`` (:data:`THINK_BLOCK`).
- ``stream_break``: a stream delivers the first half of its chunks, then raises
  :class:`OfflineStreamBreak` (unstreamed: at once), whose ``usage_metadata`` counts what was sent.

The faults that only concern one kind of request leave the others alone. Output caps are no fault:
``OfflineSalesModel(max_tokens=N)`` cuts any longer reply at ``N`` tokens.
"""

from __future__ import annotations

import random
import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from shared.errors import ProviderError, ProviderTimeoutError
from shared.llm.tokens import CHARS_PER_TOKEN

ReplyFault = Literal[
    "runaway",
    "repeat_memory",
    "placeholder_plan",
    "schema_ignored",
    "no_tool_calls",
    "text_tool_calls",
    "think_wrap",
]
"""The modes that rewrite a finished reply (``misbehave``, the emulators' reply faults)."""
REPLY_FAULTS: tuple[ReplyFault, ...] = get_args(ReplyFault)

FaultMode = Literal[
    "malformed_json",
    "truncated_json",
    "unknown_function",
    "wrong_types",
    "empty",
    "provider_error",
    ReplyFault,
    "timeout",
    "stream_break",
]
FAULT_MODES: tuple[FaultMode, ...] = get_args(FaultMode)

HALLUCINATED_FUNCTION = "consultar_ventas_totales"
"""The operation the ``unknown_function`` fault invents (in no catalog)."""

RUNAWAY_CONTEXT_TOKENS = 8192
"""Where an uncapped ``runaway`` reply stops: a full 8K context."""
REPEATED_MEMORY_ITEMS = 200
"""How many copies of one memory item a ``repeat_memory`` answer holds."""
WALL_OF_TEXT_CHARS = 4000
"""Length of a ``repeat_memory`` answer's ``estado["detalle"]``."""
PLACEHOLDER_FUNCTION = "nombre_de_operacion"
MISSING_FIELD = "campo_inexistente"
INVENTED_FIGURE = "₲987.654.321"
"""The figure a ``no_tool_calls`` reply invents (no seeded total has it)."""
INVENTED_REPLY = (
    f"Según mis registros, las ventas fueron de {INVENTED_FIGURE} y el mejor cliente fue "
    "Comercial Ficticia S.A. No necesité consultar el ERP."
)
"""The prose a ``no_tool_calls`` model answers with instead of calling a tool."""
THINK_BLOCK = (
    '<think>Reasoning… the user asks about sales. A stray { and maybe {"draft": 1} first; '
    "then the real answer.</think>\n"
)


class OfflineProviderError(ProviderError):
    """The ``provider_error`` fault."""


class OfflineProviderTimeout(ProviderTimeoutError):
    """The ``timeout`` fault."""


class OfflineStreamBreak(OfflineProviderError):
    """The ``stream_break`` fault: the connection dropped midway through a reply."""

    def __init__(self, message: str, *, input_tokens: int, output_tokens: int) -> None:
        super().__init__(message)
        self.usage_metadata: dict[str, int] = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }


class FaultConfig(BaseModel):
    """Which fault to inject, how often (0–1) and with which seed."""

    model_config = ConfigDict(frozen=True)

    mode: FaultMode = Field(description="What goes wrong.")
    rate: float = Field(default=1.0, ge=0.0, le=1.0, description="Probability that a given call is faulty.")
    seed: int = Field(default=0, description="Seed of the deterministic per-call decision.")

    def strikes(self, call_index: int) -> bool:
        """Whether call ``call_index`` (0-based, per model) is faulty: always at rate 1, never at 0."""
        return random.Random(f"{self.seed}:{call_index}").random() < self.rate


def malform_json(text: str) -> str:
    """Make JSON text invalid the way models do: a missing colon, a trailing comma, no closing brace."""
    stripped = text.rstrip()
    if stripped.endswith("}"):
        stripped = stripped[:-1].rstrip() + ","
    else:
        stripped += ",}"
    return stripped.replace('":', '"', 1)


def truncate_json(text: str) -> str:
    """Cut JSON text roughly in half (at least one character is always removed)."""
    if len(text) <= 1:
        return ""
    return text[: max(1, min(len(text) - 1, len(text) // 2))]


def break_arguments(text: str, mode: Literal["malformed_json", "truncated_json"]) -> str:
    """Tool-call arguments (a JSON object's text) broken by ``mode``, invalid however they are read.

    LangChain reassembles streamed tool-call chunks with ``parse_partial_json``, which closes whatever is
    still open and drops what does not parse, so any prefix of an object, and malformed text with an unclosed
    brace (``{"anio" 2025,``), becomes a valid call (``{}``). Broken arguments therefore keep their brackets
    balanced: ``malformed_json`` drops the first key's colon (``{"anio" 2025}``); ``truncated_json`` cuts the
    text after the key nearest its middle and closes what was open, so that key has no value
    (``{"anio":}``). Both fail ``json.loads`` and the partial parser alike, streamed or not.
    """
    if mode == "malformed_json":
        broken = re.sub(r'"(\s*):', r'"\1', text, count=1)
        return broken if broken != text else text[:1] + "," + text[1:]
    cuts = _key_cuts(text)
    if not cuts:
        return text[:1] + ":" + text[1:]
    middle = len(text) / 2
    position, closers = min(cuts, key=lambda cut: abs(cut[0] - middle))
    return text[:position] + closers


def _key_cuts(text: str) -> list[tuple[int, str]]:
    """Positions just after each key's colon in JSON ``text``, with the closers of what is open there."""
    cuts: list[tuple[int, str]] = []
    stack: list[str] = []
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and stack:
            stack.pop()
        elif char == ":":
            cuts.append((index + 1, "".join(reversed(stack))))
    return cuts


def grow(prefix: str, unit: str, tokens: int) -> str:
    """``prefix`` then ``unit`` repeated until the text is longer than ``tokens`` tokens (a runaway reply)."""
    wanted = tokens * CHARS_PER_TOKEN + 1
    if not unit or len(prefix) >= wanted:
        return prefix
    repeats = -(-(wanted - len(prefix)) // len(unit))
    return prefix + unit * repeats


def placeholder_plan(operation: str) -> dict[str, Any]:
    """A plan that copies the prompt's placeholders: a made-up operation name and a ``$ref`` to nothing.

    ``operation`` is a real operation of the catalog; its ``cliente`` refers to a field op1 never returns.
    """
    return {
        "operaciones": [
            {"id": "op1", "funcion": PLACEHOLDER_FUNCTION, "parametros": {"parametro": "valor"}},
            {
                "id": "op2",
                "funcion": operation,
                "parametros": {"cliente": {"$ref": f"op1.{MISSING_FIELD}"}},
            },
        ]
    }


def repeat_memory(answer: dict[str, Any]) -> dict[str, Any]:
    """A complete answer whose ``memoria`` repeats one item and whose ``estado`` carries a wall of text."""
    respuesta = str(answer.get("respuesta") or "Respuesta.")
    memoria = answer.get("memoria")
    item = (
        dict(memoria[0])
        if isinstance(memoria, list) and memoria and isinstance(memoria[0], dict)
        else {"contenido": respuesta[:160], "importancia": 0.9}
    )
    estado = dict(answer["estado"]) if isinstance(answer.get("estado"), dict) else {}
    wall = grow("", f"{respuesta} ", WALL_OF_TEXT_CHARS // CHARS_PER_TOKEN)[:WALL_OF_TEXT_CHARS]
    return {
        **answer,
        "memoria": [dict(item) for _ in range(REPEATED_MEMORY_ITEMS)],
        "estado": {**estado, "detalle": wall},
    }


_UNITS = ["cero", "uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve", "diez",
          "once", "doce", "trece", "catorce", "quince", "dieciséis", "diecisiete", "dieciocho", "diecinueve",
          "veinte", "veintiuno", "veintidós", "veintitrés", "veinticuatro", "veinticinco", "veintiséis",
          "veintisiete", "veintiocho", "veintinueve"]  # fmt: skip
_TENS = {3: "treinta", 4: "cuarenta", 5: "cincuenta", 6: "sesenta", 7: "setenta", 8: "ochenta", 9: "noventa"}


def spanish_number(value: int) -> str:
    """Spell out ``0 <= value < 10000`` in Spanish: ``2025`` → ``"dos mil veinticinco"``."""
    if not 0 <= value < 10000:
        return str(value)
    thousands, rest = divmod(value, 1000)
    hundreds, below = divmod(rest, 100)
    words: list[str] = []
    if thousands:
        words.append("mil" if thousands == 1 else f"{_UNITS[thousands]} mil")
    if hundreds:
        names = {1: "ciento" if below else "cien", 5: "quinientos", 7: "setecientos", 9: "novecientos"}
        words.append(names.get(hundreds, f"{_UNITS[hundreds]}cientos"))
    if below or not words:
        if below < 30:
            words.append(_UNITS[below])
        else:
            tens, units = divmod(below, 10)
            words.append(_TENS[tens] + (f" y {_UNITS[units]}" if units else ""))
    return " ".join(words)


def wrong_types(params: dict[str, Any]) -> dict[str, Any]:
    """Give parameters the wrong JSON types: numbers spelled out, strings turned into lists."""
    return {key: _wrong_type(value) for key, value in params.items()} or {"anio": "este año"}


def _wrong_type(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return value
    return spanish_number(value) if isinstance(value, int) else [value]
