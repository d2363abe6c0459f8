"""Benchmark scenarios: pydantic models for ``benchmarks/scenarios/*.yaml`` and their loader.

A scenario is one conversation: a list of user turns, each with what a correct turn does. The packaged
scenarios come in two sets (:data:`Split`): the tuning **suite** (``benchmarks/scenarios/*.yaml``), on
which prompts and tool descriptions may be tuned, and the **held-out** questions
(``benchmarks/scenarios/heldout/``), on which nothing is tuned; a file in a directory named ``heldout``
belongs to the held-out set. Expected numbers are never typed in: ``facts`` (and ``{"$fact": …}`` values
inside expected parameters or state) are expressions evaluated against the ERP database at scoring time.
Loading errors name the file, the scenario and the field.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from benchmarks.scoring.facts import FACT_KEY, FactSyntaxError, parse_fact
from shared.errors import ConfigurationError
from shared.operations.registry import OperationRegistry

__all__ = [
    "FACT_KEY",
    "HELDOUT_DIR",
    "Expectation",
    "ExpectedOperation",
    "Scenario",
    "ScenarioError",
    "ScenarioTurn",
    "Split",
    "default_scenarios_dir",
    "heldout_hash",
    "heldout_scenarios_dir",
    "load_file",
    "load_scenarios",
]


Split = Literal["suite", "heldout"]
"""Which set a scenario belongs to: the tuning ``suite`` or the ``heldout`` questions nothing is tuned on."""

HELDOUT_DIR = "heldout"
"""The name of a directory whose scenario files are held-out questions."""


class ScenarioError(ConfigurationError):
    """A scenario file is invalid; the message names the file, the scenario and the field."""

    def __init__(self, file: str, scenario: str | None, field: str | None, message: str) -> None:
        self.file = file
        self.scenario = scenario
        self.field = field
        where = file
        if scenario:
            where += f", scenario {scenario!r}"
        if field:
            where += f", field {field}"
        super().__init__(f"{where}: {message}")


def _fact_sources(value: Any) -> Iterator[str]:
    """The expression of every ``{"$fact": ...}`` reference inside ``value``; a malformed one raises."""
    if isinstance(value, dict):
        if FACT_KEY not in value:
            for item in value.values():
                yield from _fact_sources(item)
        elif len(value) != 1 or not isinstance(value[FACT_KEY], str):
            raise ValueError(f"a {FACT_KEY} reference must be {{{FACT_KEY}: 'expression'}} alone")
        else:
            yield value[FACT_KEY]
    elif isinstance(value, list):
        for item in value:
            yield from _fact_sources(item)


def _check_fact_refs(value: Any) -> Any:
    for source in _fact_sources(value):
        parse_fact(source)
    return value


class ExpectedOperation(BaseModel):
    """One call a correct turn executes."""

    model_config = ConfigDict(extra="forbid")

    funcion: str = Field(min_length=1)
    parametros: dict[str, Any] = Field(default_factory=dict)

    @field_validator("parametros")
    @classmethod
    def _facts_parse(cls, value: dict[str, Any]) -> dict[str, Any]:
        return dict(_check_fact_refs(value))


class Expectation(BaseModel):
    """What a correct turn does. Every check left out is not scored."""

    model_config = ConfigDict(extra="forbid")

    operations: list[ExpectedOperation] | None = None
    """Exactly these calls, in any order; ``[]`` means nothing may be executed; omitted means not checked."""
    facts: list[str] = Field(default_factory=list)
    """Expressions whose values must appear in the answer (numbers normalised, names folded)."""
    state: dict[str, Any] | None = None
    """Conversation state keys and values; checked only where a mode produces state."""
    answer_contains: list[str] = Field(default_factory=list)
    """Literal strings the answer must contain (case- and accent-insensitive)."""
    answer_not_contains: list[str] = Field(default_factory=list)
    """Literal strings the answer must not contain (case- and accent-insensitive)."""
    answer_contains_any: list[str] = Field(default_factory=list)
    """At least one of these strings must appear (e.g. the ways of saying "I cannot do that")."""
    denied: bool = False
    """The ERP must refuse the turn: the conversation belongs to another user (nothing else is checked)."""
    refusal: bool = False
    """The answer must say the assistant cannot do it (:func:`benchmarks.scoring.reply.says_cannot`): a
    turn that merely runs no operation while babbling does not pass."""
    asks: Literal["name", "figure"] | None = None
    """What the question asks for, when its facts hold more: only the facts whose values are names
    (``name``) or numbers (``figure``) must appear; omitted: every fact. Whatever figure or customer the
    answer states is still checked (:mod:`benchmarks.scoring.claims`)."""
    small_talk: Literal["courtesy", "capabilities"] | None = None
    """What a small-talk reply must do (only with ``operations: []``): answer a courtesy in kind, or say
    what the assistant can do, naming the topics of the ERP's operations."""

    @model_validator(mode="after")
    def _fields_fit_together(self) -> Expectation:
        if self.small_talk is not None and self.operations != []:
            raise ValueError("small_talk is the reply check of a turn that runs nothing: set operations: []")
        if self.asks is not None and not self.facts:
            raise ValueError("asks says which facts the question asks for: list the facts")
        return self

    @field_validator("facts")
    @classmethod
    def _facts_parse(cls, value: list[str]) -> list[str]:
        for fact in value:
            parse_fact(fact)
        return value

    @field_validator("state")
    @classmethod
    def _state_facts_parse(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else dict(_check_fact_refs(value))


class ScenarioTurn(BaseModel):
    """One user message and its expectations."""

    model_config = ConfigDict(extra="forbid")

    user: str = Field(min_length=1)
    """What the user writes."""
    as_user: str | None = Field(default=None, min_length=1, max_length=64)
    """Who writes it, when not the scenario's user (e.g. another user trying to continue the conversation)."""
    expect: Expectation = Field(default_factory=Expectation)


class Scenario(BaseModel):
    """One conversation, run in a fresh conversation per mode and repetition."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    category: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    description: str | None = None
    user: str | None = Field(default=None, min_length=1, max_length=64)
    """The ERP user the conversation runs as (``None``: the demo default, ``gerente``); facts are evaluated as
    that user sees the ERP."""
    turns: list[ScenarioTurn] = Field(min_length=1)
    source: str = Field(default="", exclude=True)
    """The file the scenario was loaded from (set by the loader)."""
    split: Split = Field(default="suite", exclude=True)
    """The set the scenario belongs to (set by the loader: ``heldout`` in a directory named so)."""

    def matches_tag(self, tag: str) -> bool:
        """Whether ``tag`` names this scenario's id, category or one of its tags."""
        return tag in (self.id, self.category, *self.tags)


class ScenarioFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenarios: list[dict[str, Any]] = Field(min_length=1)


def default_scenarios_dir() -> Path:
    """The tuning suite's directory."""
    return Path(str(resources.files("benchmarks") / "scenarios"))


def heldout_scenarios_dir() -> Path:
    """The held-out questions' directory."""
    return default_scenarios_dir() / HELDOUT_DIR


def heldout_hash(directory: Path | None = None) -> str:
    """SHA-256 of the held-out set (every ``*.yaml`` file's name and bytes, by name): the set is frozen, and
    every run records this hash."""
    digest = hashlib.sha256()
    for path in sorted((directory or heldout_scenarios_dir()).glob("*.yaml")):
        digest.update(path.name.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _field_path(loc: Iterable[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _first_error(exc: ValidationError) -> tuple[str | None, str]:
    error = exc.errors()[0]
    return _field_path(error["loc"]) or None, str(error["msg"]).removeprefix("Value error, ")


def load_file(path: Path) -> list[Scenario]:
    name = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ScenarioError(name, None, None, f"cannot read YAML: {exc}") from exc
    try:
        top = ScenarioFile.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(name, None, *_first_error(exc)) from None
    scenarios: list[Scenario] = []
    for index, raw in enumerate(top.scenarios):
        label = str(raw.get("id") or f"#{index + 1}")
        try:
            scenario = Scenario.model_validate(raw)
        except ValidationError as exc:
            raise ScenarioError(name, label, *_first_error(exc)) from None
        except FactSyntaxError as exc:
            raise ScenarioError(name, label, None, str(exc)) from None
        split: Split = "heldout" if path.parent.name == HELDOUT_DIR else "suite"
        scenarios.append(scenario.model_copy(update={"source": name, "split": split}))
    return scenarios


def load_scenarios(
    paths: Sequence[Path | str] | None = None,
    *,
    tags: Sequence[str] = (),
    registry: OperationRegistry | None = None,
) -> list[Scenario]:
    """Load scenarios from files and directories (``*.yaml``, sorted); default: the packaged scenarios, the
    tuning suite then the held-out questions.

    ``tags`` keeps the scenarios matching any of them. With a ``registry``, every operation named in
    expectations and facts must exist. Scenario ids must be unique across all files.
    """
    files: list[Path] = []
    for item in paths or [default_scenarios_dir(), heldout_scenarios_dir()]:
        path = Path(item)
        if path.is_dir():
            files.extend(sorted([*path.glob("*.yaml"), *path.glob("*.yml")]))
        elif path.exists():
            files.append(path)
        else:
            raise ScenarioError(str(path), None, None, "no such file or directory")
    scenarios: list[Scenario] = []
    seen: dict[str, str] = {}
    for file in files:
        for scenario in load_file(file):
            if scenario.id in seen:
                raise ScenarioError(
                    str(file), scenario.id, "id", f"duplicate scenario id (also in {seen[scenario.id]})"
                )
            seen[scenario.id] = str(file)
            scenarios.append(scenario)
    if registry is not None:
        for scenario in scenarios:
            check_operations_exist(scenario, registry)
    if tags:
        scenarios = [s for s in scenarios if any(s.matches_tag(t) for t in tags)]
    return scenarios


def check_operations_exist(scenario: Scenario, registry: OperationRegistry) -> None:
    """Raise :class:`ScenarioError` if an expected call or a fact names an operation the registry lacks."""
    for t, turn in enumerate(scenario.turns):
        expect = turn.expect
        for o, op in enumerate(expect.operations or []):
            if op.funcion not in registry:
                raise ScenarioError(
                    scenario.source,
                    scenario.id,
                    f"turns[{t}].expect.operations[{o}].funcion",
                    f"unknown operation {op.funcion!r}",
                )
        nested = [[o.parametros for o in expect.operations or []], expect.state]
        for source in [*expect.facts, *_fact_sources(nested)]:
            for name in parse_fact(source).operations():
                if name not in registry:
                    raise ScenarioError(
                        scenario.source,
                        scenario.id,
                        f"turns[{t}].expect",
                        f"fact {source!r}: unknown operation {name!r}",
                    )
