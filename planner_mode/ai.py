"""The stateless AI side of the planner: call 1 (``analyze``) and call 2 (``respond``).

:class:`PlannerAI` holds no conversation state: everything it needs arrives as arguments, so one instance can
serve any conversation from any thread or event loop (article §13). It asks the provider for native
structured output (``with_structured_output(..., method="json_schema")``) and, when the provider's parsing
fails or the model has no structured-output support, recovers the JSON from the raw text with
:mod:`planner_mode.parsing`. It never makes a second attempt: one method call is one model call.

Each call exists three ways, sharing one request and one reading of the reply: synchronous (``analyze``,
``respond``: the model's ``invoke``), asynchronous (``aanalyze``, ``arespond``: ``ainvoke``) and, for call 2,
streamed (``astream_respond``: ``astream``, yielding the answer's text as the model writes it, decoded by
:class:`~shared.json_stream.AnswerTextStream`, then the strictly parsed :class:`Answer`). A streamed call is
reported to callbacks like any other: LangChain's ``BaseChatModel.astream`` ends the run with
``on_llm_end`` carrying the merged chunks (their ``usage_metadata`` and ``response_metadata``), so a
``UsageTracker`` counts it. ``config`` is a LangChain ``RunnableConfig`` passed to the model call
(callbacks, tags, metadata).

Whatever the provider's SDK raises becomes the project's tree
(:func:`shared.llm.provider_errors.as_erp_error`): a timeout is a ``ProviderTimeoutError``, a reply cut at
the output cap an ``OutputLimitError`` (a model-output failure that says at how many tokens it was cut),
anything else a ``ProviderError``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing, contextmanager
from typing import Any, Generic, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSequence
from pydantic import BaseModel, ValidationError

from planner_mode.parsing import message_text, parse_model_output
from planner_mode.plan import Answer, OperationOutcome, Plan
from planner_mode.prompts import answer_messages, plan_messages
from shared.errors import ModelOutputError, OutputLimitError
from shared.json_stream import AnswerTextStream
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationSpec

__all__ = ["PlannerAI"]

M = TypeVar("M", bound=BaseModel)


class _StructuredCall(Generic[M]):
    """One model asked for one schema: native structured output when available, our strict parser always.

    ``with_structured_output(schema, method="json_schema")`` returns ``bound_model | parser`` for the
    providers we support. Only the bound model is used: it asks the provider for the schema (Ollama
    ``format``, OpenAI ``response_format``, Gemini ``response_schema``), and the reply is read by
    :mod:`planner_mode.parsing`, never by LangChain's JSON parser, which silently closes cut JSON (a plan cut
    after its first operation would run as a shorter plan). Skipping ``include_raw=True`` also avoids the
    ``RunnableParallel`` threads it starts on every call.
    """

    def __init__(self, model: BaseChatModel, schema: type[M]) -> None:
        from shared.llm.factory import configured_max_tokens

        self.model = model
        self.schema = schema
        self.max_tokens = configured_max_tokens(model)
        self._bound: Runnable[Any, Any] = model
        try:
            # The JSON schema (not the class) is handed over: LangChain re-derives a class's schema on every
            # call for tracing metadata, which costs milliseconds; the reply is validated in ``_parse``.
            structured = model.with_structured_output(schema.model_json_schema(), method="json_schema")
        except (NotImplementedError, ValueError, TypeError):
            # The model has no structured output (or not this method): ask plainly, parse the text.
            return
        if isinstance(structured, RunnableSequence) and len(structured.steps) == 2:
            self._bound = structured.first
        else:  # an unusual shape: keep the whole runnable and parse whatever it returns
            self._bound = structured

    def invoke(self, messages: list[BaseMessage], config: RunnableConfig | None) -> M:
        with self._provider_errors():
            output = self._bound.invoke(messages, config=config)
        return self._read(output)

    async def ainvoke(self, messages: list[BaseMessage], config: RunnableConfig | None) -> M:
        with self._provider_errors():
            output = await self._bound.ainvoke(messages, config=config)
        return self._read(output)

    async def astream(
        self, messages: list[BaseMessage], config: RunnableConfig | None, text: AnswerTextStream
    ) -> AsyncGenerator[str | M, None]:
        """The reply's text deltas as ``text`` decodes them, then the whole reply read like ``invoke``'s.

        The stream is always read to its end (LangChain reports the call to callbacks only then); an error
        midway raises after the deltas already yielded.
        """
        chunks: list[Any] = []
        # Closed however the reading ends, so that a reader who stops early ends the model's run (and its
        # connection) now rather than whenever the generator is collected. Runnable.astream is a generator.
        stream = cast(AsyncGenerator[Any, None], self._bound.astream(messages, config=config))
        with self._provider_errors():
            async with aclosing(stream):
                async for chunk in stream:
                    chunks.append(chunk)
                    if isinstance(chunk, BaseMessage):
                        delta = text.feed(message_text(chunk.content))
                        if delta:
                            yield delta
        yield self._read(_merged(chunks))

    @contextmanager
    def _provider_errors(self) -> Iterator[None]:
        """Whatever the provider's SDK raises, as the project's error (see the module docstring)."""
        # Imported on use: ``shared.llm`` also loads the offline model, which ``import planner_mode`` skips.
        from shared.llm.provider_errors import as_erp_error

        try:
            yield
        except Exception as exc:  # provider SDKs raise anything: network, HTTP, timeouts, SDK bugs
            raise as_erp_error(exc, max_tokens=self.max_tokens) from exc

    def _read(self, output: Any) -> M:
        """The reply as ``schema``: refused when the model stopped at its output cap, else parsed."""
        from shared.llm.provider_errors import stopped_at_limit

        if isinstance(output, BaseMessage) and stopped_at_limit(output):
            raise OutputLimitError(self.max_tokens, raw=message_text(output.content))
        return self._parse(output)

    def _parse(self, output: Any) -> M:
        if isinstance(output, self.schema):
            return output
        if isinstance(output, dict):
            try:
                return self.schema.model_validate(output)
            except ValidationError as exc:
                raise ModelOutputError(
                    f"The model's JSON does not match {self.schema.__name__}: {exc.errors()[0]['msg']}",
                    raw=str(output),
                ) from None
        if isinstance(output, AIMessage):
            # the function-calling fallback of BaseChatModel.with_structured_output
            for call in output.tool_calls:
                try:
                    return self.schema.model_validate(call["args"])
                except ValidationError:
                    continue
            return parse_model_output(message_text(output.content), self.schema)
        if isinstance(output, BaseMessage):
            return parse_model_output(message_text(output.content), self.schema)
        raise ModelOutputError(f"Unexpected model output of type {type(output).__name__}.", raw=str(output))


def _merged(chunks: list[Any]) -> Any:
    """A streamed reply as one message (chunks added as LangChain adds them), or the last item streamed
    (a whole runnable that streams parsed values, or a model that does not stream: one whole message)."""
    if chunks and all(isinstance(chunk, AIMessageChunk) for chunk in chunks):
        first: AIMessageChunk = chunks[0]
        return first + chunks[1:] if len(chunks) > 1 else first
    return chunks[-1] if chunks else None


class PlannerAI:
    """The article's "LLM 1" and "LLM 2": plan a question, then phrase the ERP's results.

    ``answer_model`` defaults to ``plan_model``; pass a different one to plan with a small fast model and
    write with a stronger one. Every method raises :class:`~shared.errors.ModelOutputError` (unusable output;
    ``OutputLimitError`` when cut at the output cap) or :class:`~shared.errors.ProviderError` (the provider
    failed, whatever the SDK raised, a project error included; ``ProviderTimeoutError`` on a timeout).
    """

    def __init__(self, plan_model: BaseChatModel, answer_model: BaseChatModel | None = None) -> None:
        self.plan_model = plan_model
        self.answer_model = answer_model if answer_model is not None else plan_model
        self._plan_call = _StructuredCall(self.plan_model, Plan)
        self._answer_call = _StructuredCall(self.answer_model, Answer)

    def analyze(
        self,
        message: str,
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
    ) -> Plan:
        """Call 1: turn the user's message and the conversation context into a :class:`Plan`."""
        return _with_question(
            self._plan_call.invoke(plan_messages(message, context, catalog), config), message
        )

    async def aanalyze(
        self,
        message: str,
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
    ) -> Plan:
        """:meth:`analyze` with the model's ``ainvoke``."""
        plan = await self._plan_call.ainvoke(plan_messages(message, context, catalog), config)
        return _with_question(plan, message)

    def respond(
        self,
        question: str,
        results: Sequence[OperationOutcome],
        context: ConversationContext,
        *,
        config: RunnableConfig | None = None,
    ) -> Answer:
        """Call 2: phrase the operations' results (and errors) as an :class:`Answer` for the user."""
        return _checked(self._answer_call.invoke(answer_messages(question, results, context), config))

    async def arespond(
        self,
        question: str,
        results: Sequence[OperationOutcome],
        context: ConversationContext,
        *,
        config: RunnableConfig | None = None,
    ) -> Answer:
        """:meth:`respond` with the model's ``ainvoke``."""
        answer = await self._answer_call.ainvoke(answer_messages(question, results, context), config)
        return _checked(answer)

    async def astream_respond(
        self,
        question: str,
        results: Sequence[OperationOutcome],
        context: ConversationContext,
        *,
        config: RunnableConfig | None = None,
    ) -> AsyncGenerator[str | Answer, None]:
        """:meth:`respond` streamed: the ``respuesta`` text in deltas as the model writes it, then the
        :class:`Answer`, parsed from the whole reply exactly as :meth:`respond` parses it.

        The deltas concatenate to ``Answer.respuesta`` whenever the streamed text is a start of it (a
        remainder the stream could not decode, e.g. an answer found only inside reasoning, comes as one last
        delta). A failure (cut at the cap, unusable output, provider error) raises after the deltas already
        yielded: the caller shows the final result, not the partial text.
        """
        text = AnswerTextStream("respuesta")
        async for item in self._answer_call.astream(
            answer_messages(question, results, context), config, text
        ):
            if isinstance(item, str):
                yield item
                continue
            answer = _checked(item)
            if answer.respuesta.startswith(text.text) and len(answer.respuesta) > len(text.text):
                yield answer.respuesta[len(text.text) :]
            yield answer


def _with_question(plan: Plan, message: str) -> Plan:
    """The plan with its ``pregunta`` (the user's message when the model left it empty)."""
    return plan if plan.pregunta else plan.model_copy(update={"pregunta": message})


def _checked(answer: Answer) -> Answer:
    if not answer.respuesta.strip():
        raise ModelOutputError("The model returned an empty 'respuesta'.", raw=answer.model_dump_json())
    return answer
