"""The same sales assistant as a native LangChain tool-calling agent (the article's §16 alternative).

One :func:`langchain.agents.create_agent` graph is compiled per engine, over the registry's LangChain tools
bound to the ERP, and reused for every turn. Each turn:

1. builds the turn's input from the ERP-owned memory: ``windowed`` renders the bounded context (memories,
   state, last exchange, today) into the system prompt; ``full_history`` replays every stored message and puts
   only today's date in the system prompt;
2. runs the agent with one :class:`~shared.llm.usage.UsageTracker` as callback, a model-call limit
   (``ModelCallLimitMiddleware``) and a recursion limit;
3. records the turn's messages (question, tool-calling steps, tool results, final answer) atomically and, with
   ``structured=True``, the memories and state of the structured :class:`~shared.answer.Answer`.

``ask`` never raises for model, tool or provider failures: they end in a recorded turn with a clear answer
and an entry in ``TurnResult.errors``; a turn the model could not finish (provider failure, unusable output,
a limit, or a store that could not record it) also gets a typed ``TurnResult.failure``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain.agents.structured_output import ProviderStrategy, StructuredOutputError, ToolStrategy
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.errors import GraphRecursionError

from shared.answer import Answer, MemoryItem
from shared.llm.usage import UsageTracker
from shared.memory.context import ConversationContext, render_context
from shared.memory.store import MessageIn, TurnRecord
from shared.turn import ExecutedOperation, FailureKind, TurnResult
from toolcalling_mode._middleware import TurnContext, TurnMiddleware, executed_operation
from toolcalling_mode.history import (
    answered_ids,
    message_text,
    to_langchain_messages,
    tool_call_metadata,
    tool_result_metadata,
)
from toolcalling_mode.limits import ToolCallingLimits
from toolcalling_mode.prompts import system_prompt

if TYPE_CHECKING:
    from shared.erp.database import Erp
    from shared.memory.store import MemoryStore
    from shared.operations.registry import OperationRegistry

ContextPolicy = Literal["windowed", "full_history"]
StructuredStrategy = Literal["auto", "provider", "tool"]
StopReason = Literal["done", "model_calls", "recursion", "failed"]

MODEL_CALL_LIMIT_ANSWER = (
    "Se alcanzó el límite de {limit} llamadas al modelo en este turno y no pude completar la respuesta. "
    "Intenta con una pregunta más concreta."
)
RECURSION_LIMIT_ANSWER = (
    "Se alcanzó el límite de {limit} pasos del agente en este turno y no pude completar la respuesta. "
    "Intenta con una pregunta más concreta."
)
FAILURE_ANSWER = (
    "Lo siento, no pude completar la consulta porque falló el modelo de lenguaje. Intenta de nuevo."
)
EMPTY_ANSWER = "Lo siento, no obtuve una respuesta del modelo. Intenta reformular la pregunta."

_LIMIT_MESSAGE_PREFIX = "Model call limits exceeded"
"""How ``ModelCallLimitMiddleware(exit_behavior="end")`` words the AI message it injects."""


@dataclass
class _AgentRun:
    """What one agent run left behind."""

    messages: list[BaseMessage]
    """Messages the run added after the input messages."""
    structured: Answer | None = None
    stop: StopReason = "done"
    failure: str | None = None
    failure_kind: FailureKind | None = None
    operations: list[ExecutedOperation] = field(default_factory=list)


class ToolCallingEngine:
    """A LangChain tool-calling agent over the sales registry, with ERP-owned memory."""

    def __init__(
        self,
        registry: OperationRegistry,
        erp: Erp,
        store: MemoryStore,
        model: BaseChatModel,
        *,
        policy: ContextPolicy = "windowed",
        structured: bool = False,
        limits: ToolCallingLimits | None = None,
        structured_strategy: StructuredStrategy = "auto",
    ) -> None:
        """Compile the agent once.

        Args:
            registry: The operations offered as tools (``registry.langchain_tools(erp)``).
            erp: The ERP the tools run against; its ``today`` goes into every system prompt.
            store: The conversation memory (same tables as planner mode).
            model: Any LangChain chat model that supports ``bind_tools``.
            policy: ``windowed`` (bounded context in the system prompt) or ``full_history`` (replay all).
            structured: Ask for a structured final :class:`Answer` (``respuesta``, ``memoria``, ``estado``).
            limits: Model-call and recursion limits per turn.
            structured_strategy: ``auto`` lets LangChain pick ``ProviderStrategy`` when the model's
                profile declares native structured output and ``ToolStrategy`` otherwise;
                ``provider`` or ``tool`` forces one.
        """
        if policy not in ("windowed", "full_history"):
            raise ValueError(f"Unknown context policy {policy!r}; use 'windowed' or 'full_history'.")
        self.mode: str = "toolcalling" if policy == "windowed" else "toolcalling-full"
        self.policy: ContextPolicy = policy
        self.structured = structured
        self.limits = limits or ToolCallingLimits()
        self._registry = registry
        self._erp = erp
        self._store = store
        self._structured_tool_names = (
            {spec.name for spec in ToolStrategy(Answer).schema_specs} if structured else set()
        )
        response_format: Any = _response_format(structured_strategy) if structured else None
        self._agent: Any = create_agent(
            model,
            tools=registry.langchain_tools(erp),
            middleware=[
                TurnMiddleware(),
                ModelCallLimitMiddleware(run_limit=self.limits.model_calls, exit_behavior="end"),
            ],
            response_format=response_format,
            context_schema=TurnContext,
            name=self.mode,
        )

    # -- public -----------------------------------------------------------------------------------------

    def ask(self, conversation_id: str, message: str) -> TurnResult:
        """Answer ``message`` in ``conversation_id`` (created if unknown) and record the turn."""
        started = perf_counter()
        tracker = UsageTracker()
        # record_turn creates an unknown conversation in the turn's own transaction: one write per turn.
        system_message, prior = self._turn_input(conversation_id)
        run = self._run([*prior, HumanMessage(content=message)], TurnContext(system_message), tracker)

        errors = [_operation_error(op, self._registry) for op in run.operations if op.error is not None]
        answer, memories, state_update, final_metadata = self._final_answer(run, tracker, errors)
        rows = [
            MessageIn(role="user", content=message, metadata={}),
            *self._step_rows(run.messages),
            MessageIn(role="assistant", content=answer, metadata=final_metadata),
        ]
        failure = _failure_kind(run, final_metadata)
        recorded = True
        try:
            state = self._store.record_turn(
                conversation_id, TurnRecord(messages=rows, memories=memories, state=state_update)
            )
        except Exception as exc:  # storage must not turn a finished turn into an exception
            recorded = False
            failure = "storage"
            state = self._stored_state(conversation_id)  # nothing was merged
            errors.append(f"Turn not recorded: {type(exc).__name__}: {exc}")

        total_ms = (perf_counter() - started) * 1000
        return TurnResult(
            mode=self.mode,
            conversation_id=conversation_id,
            question=message,
            answer=answer,
            operations=run.operations,
            memories=[item.contenido for item in memories],
            state=state,
            model_calls=tracker.calls,
            input_tokens=tracker.input_tokens,
            output_tokens=tracker.output_tokens,
            model_ms=tracker.model_ms,
            simulated_model_ms=tracker.simulated_model_ms,
            harness_ms=max(0.0, total_ms - tracker.model_ms),
            total_ms=total_ms,
            errors=errors,
            failure=failure,
            recorded=recorded,
        )

    def _stored_state(self, conversation_id: str) -> dict[str, Any]:
        """The conversation's state as stored, or ``{}`` when the store cannot be read either."""
        try:
            return self._store.get_state(conversation_id)
        except Exception:  # the turn already reports why it was not recorded
            return {}

    # -- turn input ---------------------------------------------------------------------------------------

    def _turn_input(self, conversation_id: str) -> tuple[SystemMessage, list[BaseMessage]]:
        """The system message and the replayed messages for this turn's policy."""
        if self.policy == "windowed":
            context = self._store.build_context(conversation_id, self._erp.today)
            prior: list[BaseMessage] = []
        else:
            context = ConversationContext(hoy=self._erp.today)
            prior = to_langchain_messages(self._store.history(conversation_id))
        text = system_prompt(render_context(context), structured=self.structured)
        return SystemMessage(content=text), prior

    # -- running -------------------------------------------------------------------------------------------

    def _run(self, inputs: list[BaseMessage], context: TurnContext, tracker: UsageTracker) -> _AgentRun:
        """Stream the agent to the end, keeping the last state even when a limit or a failure stops it."""
        for message in inputs:
            message.id = message.id or f"in-{uuid.uuid4().hex}"
        input_ids = {message.id for message in inputs}
        config: dict[str, Any] = {"callbacks": [tracker], "recursion_limit": self.limits.recursion_limit}
        state: dict[str, Any] = {}
        stop: StopReason = "done"
        failure: str | None = None
        failure_kind: FailureKind | None = None
        try:
            for values in self._agent.stream(
                {"messages": inputs}, config=config, context=context, stream_mode="values"
            ):
                state = values  # keep the last state: a limit or a failure ends the stream early
        except GraphRecursionError:
            stop = "recursion"
        except StructuredOutputError as exc:
            stop, failure, failure_kind = "failed", f"ModelOutputError: {exc}", "model_output"
        except Exception as exc:  # any provider/SDK failure ends the turn, not the caller
            stop, failure, failure_kind = "failed", f"{type(exc).__name__}: {exc}", "provider"

        new = [m for m in state.get("messages", []) if m.id not in input_ids]
        if stop == "done" and new and _is_limit_message(new[-1]):
            stop = "model_calls"
            new = new[:-1]
        structured = state.get("structured_response")  # an Answer: both strategies parse into the schema
        return _AgentRun(
            messages=new,
            structured=structured if isinstance(structured, Answer) else None,
            stop=stop,
            failure=failure,
            failure_kind=failure_kind,
            operations=self._operations(new, context),
        )

    def _operations(self, messages: Sequence[BaseMessage], context: TurnContext) -> list[ExecutedOperation]:
        """One ExecutedOperation per tool result, in the order the model asked for them."""
        operations: list[ExecutedOperation] = []
        calls: dict[str, tuple[str, Any]] = {}
        for message in messages:
            if isinstance(message, AIMessage):
                for call in message.tool_calls:
                    calls[str(call["id"])] = (call["name"], call["args"])
                for invalid in message.invalid_tool_calls:
                    calls[str(invalid.get("id"))] = (invalid.get("name") or "", {})
            elif isinstance(message, ToolMessage) and message.name not in self._structured_tool_names:
                recorded = context.operations.get(message.tool_call_id)
                if recorded is None:  # e.g. a malformed call answered by the agent without running a tool
                    name, args = calls.get(message.tool_call_id, (message.name or "", {}))
                    recorded = executed_operation(name, args, message.tool_call_id, message, 0.0)
                operations.append(recorded)
        return operations

    # -- outcome ------------------------------------------------------------------------------------------

    def _final_answer(
        self, run: _AgentRun, tracker: UsageTracker, errors: list[str]
    ) -> tuple[str, list[MemoryItem], dict[str, Any], dict[str, Any]]:
        """The text for the user, memories, state update and final-message metadata; appends to ``errors``."""
        if run.stop == "failed":
            errors.append(run.failure or "The agent run failed")
            return FAILURE_ANSWER, [], {}, {"stop": "failed"}
        if run.stop == "recursion":
            errors.append(f"Recursion limit reached ({self.limits.recursion_limit} agent steps)")
            return (
                RECURSION_LIMIT_ANSWER.format(limit=self.limits.recursion_limit),
                [],
                {},
                {"stop": "recursion"},
            )
        if run.stop == "model_calls":
            errors.append(f"Model call limit reached ({tracker.calls}/{self.limits.model_calls} calls)")
            answer = MODEL_CALL_LIMIT_ANSWER.format(limit=self.limits.model_calls)
            return answer, [], {}, {"stop": "model_calls"}
        if run.structured is not None:
            return run.structured.respuesta, list(run.structured.memoria), dict(run.structured.estado), {}
        final = next(
            (m for m in reversed(run.messages) if isinstance(m, AIMessage) and not m.tool_calls), None
        )
        text = message_text(final).strip() if final is not None else ""
        if self.structured:
            errors.append("ModelOutputError: the model ended the turn without a structured answer")
        if not text:
            errors.append("ModelOutputError: empty final answer")
            return EMPTY_ANSWER, [], {}, {"stop": "empty"}
        return text, [], {}, {}

    def _step_rows(self, messages: Sequence[BaseMessage]) -> list[MessageIn]:
        """Rows for the tool-calling steps: assistant messages with ``tool_calls`` and their tool results."""
        answered = answered_ids(messages)
        rows: list[MessageIn] = []
        open_calls: set[str] = set()
        for message in messages:
            if isinstance(message, AIMessage):
                calls = [
                    call
                    for call in tool_call_metadata(message, answered)
                    if call["name"] not in self._structured_tool_names
                ]
                if calls:
                    rows.append(
                        MessageIn(
                            role="assistant", content=message_text(message), metadata={"tool_calls": calls}
                        )
                    )
                    open_calls.update(str(call["id"]) for call in calls)
            elif isinstance(message, ToolMessage) and message.tool_call_id in open_calls:
                rows.append(
                    MessageIn(
                        role="tool", content=message_text(message), metadata=tool_result_metadata(message)
                    )
                )
        return rows


def _failure_kind(run: _AgentRun, final_metadata: dict[str, Any]) -> FailureKind | None:
    """Classify a turn that ended without a normal answer (see :data:`shared.turn.FailureKind`)."""
    stop = final_metadata.get("stop")
    if stop == "failed":
        return run.failure_kind or "provider"
    if stop in ("recursion", "model_calls"):
        return "limit"
    if stop == "empty":
        return "model_output"
    return None


def _response_format(strategy: StructuredStrategy) -> Any:
    if strategy == "provider":
        return ProviderStrategy(Answer)
    if strategy == "tool":
        return ToolStrategy(Answer)
    return Answer  # AutoStrategy: ProviderStrategy if the model's profile supports it, else ToolStrategy


def _is_limit_message(message: BaseMessage) -> bool:
    return (
        isinstance(message, AIMessage)
        and not message.tool_calls
        and message_text(message).startswith(_LIMIT_MESSAGE_PREFIX)
    )


def _operation_error(operation: ExecutedOperation, registry: OperationRegistry) -> str:
    if operation.funcion not in registry:
        return f"Unknown tool {operation.funcion!r} requested by the model: {operation.error}"
    return f"Tool {operation.funcion!r} failed: {operation.error}"
