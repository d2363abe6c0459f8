"""Every run keeps what each model call was sent and wrote (transcripts.jsonl), bounded, keyed to its turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from benchmarks.results import read_results
from benchmarks.runner import RunConfig, run_suite
from benchmarks.scenario import load_scenarios
from benchmarks.transcripts import MAX_TEXT_CHARS, TRANSCRIPTS_FILE, CallTranscript, TranscriptRecorder
from tests.fakes import FunctionChatModel

TURN = {"mode": "planner", "scenario": "s", "turn": 1, "repetition": 1}


def test_a_call_is_kept_as_sent_and_as_written() -> None:
    recorder = TranscriptRecorder()
    model = FunctionChatModel(lambda _messages, _info: "Vendimos ₲850.000.000 en 2025.")
    model.invoke(
        [SystemMessage("Eres un asistente."), HumanMessage("¿Ventas?")], config={"callbacks": [recorder]}
    )

    [call] = recorder.transcripts(**TURN)

    assert [(m.role, m.text) for m in call.messages] == [
        ("system", "Eres un asistente."),
        ("human", "¿Ventas?"),
    ]
    assert call.output is not None and call.output.text == "Vendimos ₲850.000.000 en 2025."
    assert (call.call, call.error, call.cut) == (0, None, False)


def test_tool_calls_and_a_failure_are_kept_too() -> None:
    recorder = TranscriptRecorder()
    asks = AIMessage("", tool_calls=[{"name": "ventas_anuales", "args": {"anio": 2025}, "id": "c1"}])
    FunctionChatModel(lambda _m, _i: asks).invoke("¿Ventas?", config={"callbacks": [recorder]})

    def broken(_messages: object, _info: object) -> str:
        raise ConnectionError("the server went away")

    with pytest.raises(ConnectionError):
        FunctionChatModel(broken).invoke("¿Ventas?", config={"callbacks": [recorder]})

    asked, failed = recorder.transcripts(**TURN)
    assert asked.output is not None and asked.output.tool_calls == [
        {"name": "ventas_anuales", "args": '{"anio": 2025}'}
    ]
    assert (
        failed.output is None and failed.error == "ConnectionError: the server went away" and failed.call == 1
    )


def test_a_long_text_is_cut_and_the_line_says_so() -> None:
    recorder = TranscriptRecorder()
    FunctionChatModel(lambda _m, _i: "a" * (3 * MAX_TEXT_CHARS)).invoke("x", config={"callbacks": [recorder]})

    [call] = recorder.transcripts(**TURN)

    assert call.cut and call.output is not None and len(call.output.text) < MAX_TEXT_CHARS + 50


def test_a_run_writes_one_line_per_model_call_beside_its_results(tmp_path: Path, erp_db_url: str) -> None:
    config = RunConfig(modes=["planner", "toolcalling"], out_dir=tmp_path, warmup=1)
    run_suite(load_scenarios(tags=["articulo"]), config, db_url=erp_db_url, show_progress=False)

    rows = read_results(tmp_path / "results.jsonl").rows
    lines = (tmp_path / TRANSCRIPTS_FILE).read_text(encoding="utf-8").splitlines()
    calls = [CallTranscript.model_validate(json.loads(line)) for line in lines]

    assert len(calls) == sum(row.model_calls for row in rows) > 0  # warm-up turns included
    first = rows[0]
    keyed = [
        c
        for c in calls
        if (c.mode, c.scenario, c.turn, c.repetition) == (first.mode, first.scenario, 1, first.repetition)
    ]
    assert [c.call for c in keyed] == list(range(first.model_calls))
    assert keyed[0].messages[-1].text.endswith(first.user)  # what the user asked, as the model read it
