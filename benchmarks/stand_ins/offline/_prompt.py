"""Reading a prompt: everything the offline model knows comes from the messages it is sent.

The labels are the ones :func:`shared.memory.context.render_context` writes ("Fecha de hoy:", "Estado de la
conversación:", "Memoria relevante:", "Último intercambio:", "Nueva pregunta:", "Pregunta:", "Resultados:");
with full-history tool calling, earlier tool calls and results are conversation context too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from benchmarks.stand_ins.offline._figures import read_figures
from benchmarks.stand_ins.offline._names import name_in_answer
from shared.text import fold

_DATE = re.compile(r"Fecha de hoy:\s*(\d{4}-\d{2}-\d{2})")
_STATE_LABEL = "Estado de la conversación:"
_MEMORY_LABEL = "Memoria relevante:"
_EXCHANGE_LABEL = "Último intercambio:"
_CUSTOMER_MENTIONS = re.compile(
    r"(?:mejor cliente|best customer)(?: (?:de|del|of|in) (?:19|20)\d{2})?(?: fue| es| was| is|:)\s+"
    r"|(?:facturas pendientes|pending invoices|unpaid invoices) (?:de|del|of|from)\s+"
    r"|(?:^|(?<=[.!?]\s))(?=[A-ZÁÉÍÓÚÑ][^!?\n]{0,80}? (?:nos )?(?:compró|bought) ₲)",
    re.IGNORECASE,
)
"""Where an earlier message names a customer ("el mejor cliente de 2025 fue X", "X compró ₲…")."""
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_CALL = re.compile(r"([A-Za-z_]\w*)\(")
_ARGUMENT = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*")
STATE_KEYS = ("tema", "anio", "cliente_actual", "ultima_operacion", "ultimas_operaciones")
ARTICLE_STATE_KEYS = ("tema", "anio", "cliente_actual")
"""What it keeps when the instructions name none: the article's example state."""
_RESULTS_NOT_REMEMBERED = re.compile(
    r"memoria\W.{0,120}?\bno (?:esten|este|figuren|aparezcan) en los resultados"
    r"|memory\W.{0,120}?\bnot (?:already )?in the results"
)
_ERROR_STARTS = ("error", "no tiene permiso", "no tiene acceso")
"""How a tool result that is an error starts (the ERP's refusals too) when its status does not say so."""


@dataclass(frozen=True)
class TurnCall:
    """A tool call the model made earlier in the current turn, with its result when one came back."""

    id: str
    name: str
    args: dict[str, Any]
    result: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class AnswerInstructions:
    """What the system prompt's instructions ask an answer to keep: the state keys they name, and whether
    ``memoria`` may restate the results."""

    state_keys: tuple[str, ...] = ARTICLE_STATE_KEYS
    remember_results: bool = True


def answer_instructions(system: str) -> AnswerInstructions:
    """Read :class:`AnswerInstructions` from a system prompt, skipping the context lines rendered into it
    (a state that already holds ``cliente_actual`` does not ask for it) and its worked examples (a line
    starting "Ejemplo" and what follows it: they show, they do not ask)."""
    instructions = re.split(r"^Ejemplo", system, maxsplit=1, flags=re.MULTILINE)[0]
    lines = [
        line for line in instructions.splitlines() if not line.startswith(("- ", "Usuario: ", "Asistente: "))
    ]
    text = "\n".join(lines)
    named = tuple(key for key in STATE_KEYS if re.search(rf"(?<!\w){key}(?!\w)", text))
    folded = fold(text)
    return AnswerInstructions(
        state_keys=named or ARTICLE_STATE_KEYS,
        remember_results=_RESULTS_NOT_REMEMBERED.search(folded) is None,
    )


@dataclass(frozen=True)
class Conversation:
    """What the prompt says about the conversation so far (state, memory, history)."""

    today: date | None = None
    state: dict[str, Any] = field(default_factory=dict)
    memory: tuple[str, ...] = ()
    exchanges: tuple[tuple[str, str], ...] = ()
    cliente: str | None = None
    anio: int | None = None
    previous_operations: tuple[tuple[str, dict[str, Any]], ...] = ()
    previous_question: str | None = None
    instructions: AnswerInstructions = field(default_factory=AnswerInstructions)


@dataclass(frozen=True)
class PromptView:
    """A prompt, read: the system text, the current question, the context and this turn's tool calls."""

    system: str
    human: str
    question: str
    conversation: Conversation
    results: list[dict[str, Any]] | None
    turn_calls: tuple[TurnCall, ...]
    all_text: str
    compact_json: bool = False
    """The example replies (else the instructions' JSON examples) are compact: a model copies the style of
    the examples it is shown."""

    @property
    def catalog_text(self) -> str:
        """Where the prompt lists its operations: the system prompt, else the human message before the
        question (never the question: a user who types an operation's name does not add it)."""
        if self.system:
            return self.system
        marker = self.human.rfind("Nueva pregunta:")
        return self.human[:marker] if marker >= 0 else ""


def message_text(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return message.text


def _split_examples(messages: list[BaseMessage]) -> tuple[list[BaseMessage], list[str]]:
    """``messages`` without worked examples (a human message starting ``Ejemplo`` and the reply after it),
    and the examples' replies."""
    kept: list[BaseMessage] = []
    replies: list[str] = []
    skip_reply = False
    for message in messages:
        if isinstance(message, HumanMessage) and message_text(message).startswith("Ejemplo"):
            skip_reply = True
            continue
        if skip_reply and isinstance(message, AIMessage):
            skip_reply = False
            replies.append(message_text(message))
            continue
        skip_reply = False
        kept.append(message)
    return kept, replies


def _turn_start(messages: list[BaseMessage], last_human: int) -> int:
    """Where the current turn's human text starts: the last human message, or, when it holds only results
    (``Resultados:``, no question) after a reply without tool calls, the question message before that reply
    (call 2 continuing call 1's conversation)."""
    text = message_text(messages[last_human])
    if last_human < 2 or "Resultados:" not in text or "Pregunta:" in text:
        return last_human
    reply, question = messages[last_human - 1], messages[last_human - 2]
    if isinstance(reply, AIMessage) and not reply.tool_calls and isinstance(question, HumanMessage):
        return last_human - 2
    return last_human


def read_prompt(messages: list[BaseMessage]) -> PromptView:
    messages, example_replies = _split_examples(messages)
    system = "\n".join(message_text(m) for m in messages if isinstance(m, SystemMessage))
    last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    start = _turn_start(messages, last_human) if last_human >= 0 else -1
    human = "\n\n".join(
        message_text(m) for m in messages[start : last_human + 1] if isinstance(m, HumanMessage)
    )
    earlier = messages[:start] if start >= 0 else []
    turn = messages[last_human + 1 :] if last_human >= 0 else []
    context_text = f"{system}\n{human}"
    conversation = replace(_conversation(context_text, earlier), instructions=answer_instructions(system))
    return PromptView(
        system=system,
        human=human,
        question=extract_question(human),
        conversation=conversation,
        results=_results(human),
        turn_calls=_turn_calls(turn),
        all_text=context_text,
        compact_json=(
            all(compact_examples(reply) for reply in example_replies)
            if example_replies
            else compact_examples(system)
        ),
    )


_JSON_MEMBER = re.compile(r'"[^"\n]{1,60}"([ \t]*):([ \t]*)(?=["\[{0-9-]|true\b|false\b|null\b)')
"""A JSON member's key and colon, with the spaces around the colon, and a value on the same line."""


def compact_examples(instructions: str) -> bool:
    """Whether the JSON examples in ``instructions`` are compact: some ``"key":value`` member, none with
    whitespace around its colon."""
    gaps = [match.group(1) + match.group(2) for match in _JSON_MEMBER.finditer(instructions)]
    return bool(gaps) and not any(gaps)


def extract_question(text: str) -> str:
    """The question inside a human message (after ``Nueva pregunta:``, else the last ``Pregunta:`` line
    before ``Resultados:``), else all of it."""
    marker = text.rfind("Nueva pregunta:")
    if marker >= 0:
        rest = text[marker + len("Nueva pregunta:") :].strip()
        rest = re.sub(r"^Usuario:\s*", "", rest)
        return rest.split("\n\n")[0].strip()
    results = text.rfind("Resultados:")
    lines = (text[:results] if results >= 0 else text).splitlines()
    for index in reversed(range(len(lines))):
        match = re.match(r"\s*Pregunta:\s*(.*)$", lines[index])
        if match:
            if match.group(1).strip():
                return match.group(1).strip()
            for following in lines[index + 1 :]:
                if following.strip():
                    return following.strip()
    return text.strip()


def _results(text: str) -> list[dict[str, Any]] | None:
    marker = text.rfind("Resultados:")
    if marker < 0:
        return None
    start = text.find("[", marker)
    if start < 0:
        return []
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError:
        return []
    return [read_figures(item) for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _block(text: str, label: str) -> list[str]:
    """The ``- item`` lines following the last occurrence of ``label``."""
    marker = text.rfind(label)
    if marker < 0:
        return []
    items: list[str] = []
    for line in text[marker + len(label) :].splitlines()[1:]:
        if not line.startswith("- "):
            break
        items.append(line[2:])
    return items


def _exchanges(text: str) -> list[tuple[str, str]]:
    marker = text.rfind(_EXCHANGE_LABEL)
    if marker < 0:
        return []
    pairs: list[tuple[str, str]] = []
    user: str | None = None
    for line in text[marker + len(_EXCHANGE_LABEL) :].splitlines()[1:]:
        if line.startswith("Usuario: "):
            user = line[len("Usuario: ") :]
        elif line.startswith("Asistente: ") and user is not None:
            pairs.append((user, line[len("Asistente: ") :]))
            user = None
        elif line.strip() and not line.startswith(("Usuario", "Asistente")):
            break
    return pairs


def _parse_value(raw: str) -> Any:
    try:
        return read_figures(json.loads(raw))
    except json.JSONDecodeError:
        return raw.strip()


def _state(text: str) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for line in _block(text, _STATE_LABEL):
        key, sep, value = line.partition(": ")
        if sep:
            state[key.strip()] = _parse_value(value)
    return state


def _as_year(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and 1900 <= value <= 2100:
        return value
    if isinstance(value, str) and re.fullmatch(r"(?:19|20)\d{2}", value.strip()):
        return int(value)
    return None


def parse_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Operations in call notation, ``f(a=1, b="x"); g()`` (values as JSON), up to the first malformed one."""
    decoder = json.JSONDecoder()
    calls: list[tuple[str, dict[str, Any]]] = []
    position = 0
    while (start := _CALL.search(text, position)) is not None:
        position = start.end()
        arguments: dict[str, Any] = {}
        while True:
            rest = text[position:]
            position += len(rest) - len(rest.lstrip(" ,"))
            if text.startswith(")", position):
                position += 1
                break
            argument = _ARGUMENT.match(text, position)
            if argument is None:
                return calls
            try:
                value, position = decoder.raw_decode(text, argument.end())
            except json.JSONDecodeError:
                return calls
            arguments[argument.group(1)] = value
        calls.append((start.group(1), arguments))
    return calls


def _operations(value: Any) -> list[tuple[str, dict[str, Any]]]:
    """Operations from a state value: call notation, a name, ``{"funcion", "parametros"}``, or a list."""
    items = value if isinstance(value, list) else [value]
    operations: list[tuple[str, dict[str, Any]]] = []
    for item in items:
        if isinstance(item, str) and "(" in item:
            operations.extend(parse_calls(item))
        elif isinstance(item, str) and item.strip():
            operations.append((item.strip(), {}))
        elif isinstance(item, dict) and isinstance(item.get("funcion"), str):
            params = item.get("parametros")
            operations.append((item["funcion"], dict(params) if isinstance(params, dict) else {}))
    return operations


def _conversation(text: str, earlier: list[BaseMessage]) -> Conversation:
    dates = _DATE.findall(text)
    try:
        today = date.fromisoformat(dates[-1]) if dates else None
    except ValueError:
        today = None
    history = _history(earlier)
    state = {**history.state, **_state(text)}
    memory = tuple(_block(text, _MEMORY_LABEL))
    exchanges = tuple(_exchanges(text))

    cliente = state.get("cliente_actual") or state.get("cliente")
    if not isinstance(cliente, str) or not cliente.strip():
        cliente = history.cliente or _cliente_from_text([*memory, *(a for _, a in exchanges)])
    anio = (
        _as_year(state.get("anio")) or history.anio or _year_from_text([*memory, *(a for _, a in exchanges)])
    )

    keys = ("ultimas_operaciones", "operaciones", "ultima_operacion")
    found = (ops for key in keys if key in state and (ops := _operations(state[key])))
    operations = next(found, history.operations)
    previous_question = exchanges[-1][0] if exchanges else history.question
    return Conversation(
        today=today,
        state=state,
        memory=memory,
        exchanges=exchanges,
        cliente=cliente.strip() if isinstance(cliente, str) and cliente.strip() else None,
        anio=anio,
        previous_operations=tuple(operations),
        previous_question=previous_question,
    )


def _cliente_from_text(texts: list[str]) -> str | None:
    return next(
        (name for text in reversed(texts) if (name := name_in_answer(text, _CUSTOMER_MENTIONS))), None
    )


def _year_from_text(texts: list[str]) -> int | None:
    return next((int(years[-1]) for text in reversed(texts) if (years := _YEAR.findall(text))), None)


@dataclass
class _History:
    state: dict[str, Any] = field(default_factory=dict)
    cliente: str | None = None
    anio: int | None = None
    operations: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    question: str | None = None

    def note(self, data: dict[str, Any]) -> None:
        """Take the customer and year a tool call's arguments or result name."""
        if isinstance(data.get("cliente"), str) and data["cliente"].strip():
            self.cliente = data["cliente"].strip()
        year = _as_year(data.get("anio"))
        if year:
            self.anio = year


def _history(earlier: list[BaseMessage]) -> _History:
    history = _History()
    last_turn: list[tuple[str, dict[str, Any]]] = []
    for message in earlier:
        if isinstance(message, HumanMessage):
            history.question = extract_question(message_text(message))
            if last_turn:
                history.operations = last_turn
            last_turn = []
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                args = dict(call.get("args") or {})
                if isinstance(args.get("estado"), dict):
                    history.state.update(args["estado"])
                    continue
                last_turn.append((call["name"], args))
                history.note(args)
        elif isinstance(message, ToolMessage):
            data = _parse_value(message_text(message))
            if isinstance(data, dict):
                history.note(data)
    if last_turn:
        history.operations = last_turn
    return history


def _turn_calls(turn: list[BaseMessage]) -> tuple[TurnCall, ...]:
    results: dict[str, tuple[str, bool]] = {}
    for message in turn:
        if isinstance(message, ToolMessage):
            content = message_text(message)
            is_error = message.status == "error" or content.lstrip().lower().startswith(_ERROR_STARTS)
            results[message.tool_call_id] = (content, is_error)
    calls: list[TurnCall] = []
    for message in turn:
        if not isinstance(message, AIMessage):
            continue
        made = [(c.get("id") or "", c["name"], dict(c.get("args") or {}), False) for c in message.tool_calls]
        made += [(c.get("id") or "", c.get("name") or "", {}, True) for c in message.invalid_tool_calls]
        for call_id, name, args, invalid in made:
            result, is_error = results.get(call_id, (None, False))
            calls.append(TurnCall(call_id, name, args, result=result, is_error=invalid or is_error))
    return tuple(calls)
