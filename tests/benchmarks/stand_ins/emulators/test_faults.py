"""How a request's fault is chosen: header first, then the server-wide configuration."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchmarks.stand_ins.emulators import DELAY_HEADER, FAULT_HEADER, FAULT_MODES, EmulatorServer
from benchmarks.stand_ins.emulators.faults import (
    EmulatorFaults,
    FaultDecision,
    FaultStep,
    UnknownFaultError,
    parse_fault_spec,
)
from benchmarks.stand_ins.faults import REPLY_FAULTS


@pytest.mark.parametrize("mode", FAULT_MODES)
def test_the_header_selects_any_mode_case_insensitively(mode: str) -> None:
    assert EmulatorFaults().decide({FAULT_HEADER.lower(): mode}).mode == mode


def test_the_header_wins_over_the_server_wide_mode_and_none_switches_it_off() -> None:
    faults = EmulatorFaults(mode="http_500")

    assert faults.decide({FAULT_HEADER: "stream_error"}).mode == "stream_error"
    assert faults.decide({FAULT_HEADER: "none"}).mode is None
    assert faults.decide({}).mode == "http_500"
    assert EmulatorFaults().decide({}) == FaultDecision()  # nothing configured: no fault


def test_count_limits_how_many_requests_get_the_server_wide_fault() -> None:
    faults = EmulatorFaults(mode="http_500", count=2)

    assert [faults.decide({}).mode for _ in range(3)] == ["http_500", "http_500", None]
    assert faults.count == 0


def test_slow_uses_the_configured_delay_unless_the_request_overrides_it() -> None:
    faults = EmulatorFaults(mode="slow", slow_seconds=2.5)

    assert faults.decide({}).delay_seconds == 2.5
    assert faults.decide({DELAY_HEADER: "0.25"}).delay_seconds == 0.25
    assert faults.decide({FAULT_HEADER: "http_500"}).delay_seconds == 0.0


def test_unknown_header_values_are_refused() -> None:
    with pytest.raises(UnknownFaultError, match="meteor"):
        EmulatorFaults().decide({FAULT_HEADER: "meteor"})
    with pytest.raises(UnknownFaultError, match=DELAY_HEADER):
        EmulatorFaults().decide({FAULT_HEADER: "slow", DELAY_HEADER: "soon"})


def test_configuration_is_validated_even_when_changed_live() -> None:
    with pytest.raises(ValidationError):
        EmulatorFaults().mode = "meteor"  # type: ignore[assignment]
    with pytest.raises(ValidationError):
        EmulatorFaults(slow_seconds=-1)
    with pytest.raises(ValidationError, match="either mode"):
        EmulatorFaults(mode="slow", sequence=["http_500:1"])


def test_a_sequence_runs_each_step_for_its_count_then_the_open_ended_last_step() -> None:
    faults = EmulatorFaults(sequence=[("http_500", 2), ("slow", None)], slow_seconds=0.5)

    decisions = [faults.decide({}) for _ in range(5)]

    assert [d.mode for d in decisions] == ["http_500", "http_500", "slow", "slow", "slow"]
    assert decisions[2].delay_seconds == 0.5


def test_a_sequence_of_counted_steps_ends_with_no_fault_and_headers_use_up_no_step() -> None:
    faults = EmulatorFaults(sequence=["stall:1", "http_500:1"])

    assert faults.decide({FAULT_HEADER: "none"}).mode is None
    assert [faults.decide({}).mode for _ in range(3)] == ["stall", "http_500", None]
    assert [step.count for step in faults.sequence] == [0, 0]


def test_the_server_numbers_its_model_requests_whatever_their_fault(ollama_server: EmulatorServer) -> None:
    ollama_server.faults = EmulatorFaults(mode="http_500", count=1)
    first = ollama_server.decide({})
    decisions = [ollama_server.decide({FAULT_HEADER: fault}) for fault in ("none", "runaway")]

    assert [first.index + n for n in (1, 2)] == [d.index for d in decisions]
    assert (first.mode, decisions[1].reply_fault) == ("http_500", "runaway")
    assert FaultDecision(mode="http_500").reply_fault is None and set(REPLY_FAULTS) < set(FAULT_MODES)


@pytest.mark.parametrize(
    ("spec", "step"),
    [("http_500:2", FaultStep(mode="http_500", count=2)), ("stall", FaultStep(mode="stall")),
     (" Runaway : 3 ", FaultStep(mode="runaway", count=3))],
)  # fmt: skip
def test_parse_fault_spec_reads_kind_and_optional_count(spec: str, step: FaultStep) -> None:
    assert parse_fault_spec(spec) == step


def test_parse_fault_spec_lists_the_valid_kinds_for_an_unknown_one() -> None:
    with pytest.raises(ValueError, match="Unknown emulator fault 'meteor'") as caught:
        parse_fault_spec("meteor:2")
    assert all(mode in str(caught.value) for mode in FAULT_MODES)


@pytest.mark.parametrize("spec", ["http_500:0", "http_500:-1", "http_500:two", "http_500:", "http_500:1.5"])
def test_parse_fault_spec_refuses_counts_below_one(spec: str) -> None:
    with pytest.raises(ValueError, match="COUNT must be a whole number, 1 or more"):
        parse_fault_spec(spec)


def test_an_endless_step_before_others_is_refused() -> None:
    with pytest.raises(ValueError, match="'slow' has no COUNT"):
        EmulatorFaults.from_specs(["slow", "http_500:1"])
    with pytest.raises(ValidationError, match="never ends"):
        EmulatorFaults(sequence=[("slow", None), ("http_500", 1)])


def test_describe_says_the_configuration_in_spec_words() -> None:
    assert EmulatorFaults.from_specs(["http_500:2", "slow"]).describe() == "http_500:2, then slow"
    assert EmulatorFaults(mode="stall").describe() == "stall"
    assert EmulatorFaults().describe() == "none"
