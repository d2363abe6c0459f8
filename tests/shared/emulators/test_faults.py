"""How a request's fault is chosen: header first, then the server-wide configuration."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.emulators.faults import (
    DELAY_HEADER,
    FAULT_HEADER,
    FAULT_MODES,
    EmulatorFaults,
    FaultDecision,
    FaultSelector,
    UnknownFaultError,
)


def test_no_configuration_and_no_header_means_no_fault() -> None:
    assert FaultSelector().decide({}) == FaultDecision()


@pytest.mark.parametrize("mode", FAULT_MODES)
def test_the_header_selects_any_mode_case_insensitively(mode: str) -> None:
    decision = FaultSelector().decide({FAULT_HEADER.lower(): mode})

    assert decision.mode == mode


def test_the_header_wins_over_the_server_wide_mode() -> None:
    selector = FaultSelector(EmulatorFaults(mode="http_500"))

    assert selector.decide({FAULT_HEADER: "stream_error"}).mode == "stream_error"
    assert selector.decide({FAULT_HEADER: "none"}).mode is None
    assert selector.decide({}).mode == "http_500"


def test_count_limits_how_many_requests_get_the_server_wide_fault() -> None:
    selector = FaultSelector(EmulatorFaults(mode="http_500", count=2))

    modes = [selector.decide({}).mode for _ in range(3)]

    assert modes == ["http_500", "http_500", None]
    assert selector.faults.count == 0


def test_slow_uses_the_configured_delay_unless_the_request_overrides_it() -> None:
    selector = FaultSelector(EmulatorFaults(mode="slow", slow_seconds=2.5))

    assert selector.decide({}).delay_seconds == 2.5
    assert selector.decide({DELAY_HEADER: "0.25"}).delay_seconds == 0.25
    assert selector.decide({FAULT_HEADER: "http_500"}).delay_seconds == 0.0


def test_unknown_header_values_are_refused() -> None:
    with pytest.raises(UnknownFaultError, match="meteor"):
        FaultSelector().decide({FAULT_HEADER: "meteor"})
    with pytest.raises(UnknownFaultError, match=DELAY_HEADER):
        FaultSelector().decide({FAULT_HEADER: "slow", DELAY_HEADER: "soon"})


def test_configuration_is_validated_even_when_changed_live() -> None:
    faults = EmulatorFaults()

    with pytest.raises(ValidationError):
        faults.mode = "meteor"  # type: ignore[assignment]
    with pytest.raises(ValidationError):
        EmulatorFaults(slow_seconds=-1)
