"""``ask --grounding``: what the CLI does with an answer whose figures the ERP did not return.

The model is the offline stand-in behind the Ollama emulator with the ``no_tool_calls`` fault: tool calling's
model answers from "its records" (₲987.654.321 for 2025's sales, where the ERP says ₲850.000.000) without
calling a tool.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from benchmarks.cli.app import app
from benchmarks.stand_ins.emulators import EmulatorFaults, start_emulator

runner = CliRunner()
INVENTED = "987.654.321"


@pytest.fixture(scope="module")
def inventing_server() -> Iterator[str]:
    with start_emulator("ollama", faults=EmulatorFaults(mode="no_tool_calls")) as base_url:
        yield base_url


def ask(base_url: str, env: dict[str, str | None], *grounding: str) -> tuple[int, dict[str, object]]:
    args = ["ask", "¿Cuánto vendimos en 2025?", "--mode", "toolcalling", "--provider", "ollama"]
    result = runner.invoke(app, [*args, "--base-url", base_url, "--json", *grounding], env=env)
    return result.exit_code, json.loads(result.stdout)


def test_by_default_an_invented_figure_is_refused_and_the_command_fails(
    inventing_server: str, cli_env: dict[str, str | None]
) -> None:
    code, turn = ask(inventing_server, cli_env)

    assert code == 1
    assert turn["failure"] == "ungrounded" and turn["ungrounded_figures"] == [INVENTED]
    assert turn["recorded"] is True, "kept as the user read it: the refusal, not the invented figure"
    assert INVENTED in str(turn["answer"]) and str(turn["answer"]).startswith("Lo siento")


def test_flag_shows_the_answer_with_its_ungrounded_figures(
    inventing_server: str, cli_env: dict[str, str | None]
) -> None:
    code, turn = ask(inventing_server, cli_env, "--grounding", "flag")

    assert code == 0
    assert turn["failure"] is None and INVENTED in str(turn["answer"])
    assert turn["ungrounded_figures"] == [INVENTED] and turn["recorded"] is True


def test_off_does_not_check(inventing_server: str, cli_env: dict[str, str | None]) -> None:
    code, turn = ask(inventing_server, cli_env, "--grounding", "off")

    assert code == 0 and turn["ungrounded_figures"] == [] and INVENTED in str(turn["answer"])
