"""The model matrix: which models a benchmark run measures, each under a short name (``--target``).

A target is written ``NAME=provider[:model][@base_url]``, e.g. ``a=offline`` or
``llama=ollama:llama3.1:8b@http://127.0.0.1:11434``: the model runs from the first ``:`` to the first ``@``
(so it may contain ``:``), the base URL is everything after that ``@``; ``provider`` alone means its default
model. Names are unique within a run and use letters, digits, ``-``, ``_`` and ``.`` (they appear in file
names, tables and rows). Without ``--target`` a run has one implicit target, :data:`DEFAULT_TARGET`, from
``--provider``, ``--model`` and ``--base-url``. A run file (``--targets-file``) lists targets in YAML, as
specs or as mappings::

    targets:
      - a=offline
      - {name: llama, provider: ollama, model: "llama3.1:8b", base_url: "http://127.0.0.1:11434"}
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from benchmarks.stand_ins.models import DEFAULT_MODELS, PROVIDERS
from shared.errors import ConfigurationError

DEFAULT_TARGET = "default"
"""The name of a run's implicit target (no ``--target``), and of rows written before targets existed."""

TARGET_SYNTAX = "NAME=provider[:model][@base_url]"
"""How a target is written on the command line."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


class BenchTarget(BaseModel):
    """One model of the matrix: a name, the provider, the model (``None``: the provider's default) and the
    server URL."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Short unique name: letters, digits, '-', '_' and '.', at most 40.")
    provider: str
    model: str | None = None
    base_url: str | None = None

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                f"target name {value!r} must start with a letter or digit and use only letters, digits, "
                "'-', '_' and '.' (at most 40 characters), e.g. a=offline"
            )
        return value

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        name = value.strip().lower()
        if name not in PROVIDERS:
            raise ValueError(f"unknown provider {value!r}; valid providers: {', '.join(PROVIDERS)}")
        return name

    @field_validator("model", "base_url")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @property
    def model_name(self) -> str:
        """The model actually used: the given one, or the provider's default."""
        return self.model or DEFAULT_MODELS.get(self.provider, "?")

    @property
    def offline(self) -> bool:
        """Whether the deterministic offline stand-in is this target's model."""
        return self.provider == "offline"

    @property
    def spec(self) -> str:
        """The target as it is written on the command line: ``a=offline:offline-sales``."""
        text = f"{self.name}={self.provider}"
        if self.model:
            text += f":{self.model}"
        if self.base_url:
            text += f"@{self.base_url}"
        return text

    @property
    def label(self) -> str:
        """``provider model [at URL]``, for report headings."""
        text = f"{self.provider} {self.model_name}"
        return text + (f" at {self.base_url}" if self.base_url else "")


def _invalid(spec: str, why: str) -> ConfigurationError:
    return ConfigurationError(
        f"Invalid --target {spec!r}: {why}. Write {TARGET_SYNTAX}, e.g. --target a=offline or "
        "--target llama=ollama:llama3.1:8b@http://127.0.0.1:11434."
    )


def _error_text(exc: ValidationError) -> str:
    return "; ".join(str(error["msg"]).removeprefix("Value error, ") for error in exc.errors())


def parse_target(spec: str) -> BenchTarget:
    """``"a=ollama:llama3.1:8b@http://host:11434"`` → :class:`BenchTarget`.

    Raises :class:`ConfigurationError` saying what to write when the spec is malformed.
    """
    name, equals, rest = spec.strip().partition("=")
    if not equals:
        raise _invalid(spec, "it has no '=' between the name and the provider")
    if not name.strip():
        raise _invalid(spec, "the name before '=' is empty")
    provider_model, at, base_url = rest.partition("@")
    provider, colon, model = provider_model.partition(":")
    if not provider.strip():
        raise _invalid(spec, "the provider after '=' is empty")
    if colon and not model.strip():
        raise _invalid(spec, "the model after ':' is empty (leave out ':' for the provider's default model)")
    if at and not base_url.strip():
        raise _invalid(spec, "the base URL after '@' is empty")
    try:
        return BenchTarget(
            name=name.strip(), provider=provider, model=model or None, base_url=base_url or None
        )
    except ValidationError as exc:
        raise _invalid(spec, _error_text(exc)) from None


def unique_targets(targets: list[BenchTarget]) -> list[BenchTarget]:
    """``targets`` unchanged; raises :class:`ConfigurationError` when a name is used twice."""
    seen: set[str] = set()
    for target in targets:
        if target.name in seen:
            raise ConfigurationError(
                f"Target name {target.name!r} is used twice: give every --target its own name "
                "(a=offline --target b=offline:offline-sales)."
            )
        seen.add(target.name)
    return targets


def parse_targets(specs: Sequence[str]) -> list[BenchTarget]:
    """Every ``--target`` spec, in order; names must be unique."""
    return unique_targets([parse_target(spec) for spec in specs])


class _TargetsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    targets: list[str | dict[str, Any]] = Field(min_length=1)


def load_targets_file(path: Path) -> list[BenchTarget]:
    """The targets of a YAML run file (see the module docstring); raises :class:`ConfigurationError`."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"Cannot read targets file {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{path}: not valid YAML: {exc}") from None
    try:
        listed = _TargetsFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(
            f"{path}: expected 'targets:' with a list of {TARGET_SYNTAX} specs or "
            f"{{name, provider, model, base_url}} mappings ({_error_text(exc)})."
        ) from None
    targets = []
    for number, entry in enumerate(listed.targets, start=1):
        if isinstance(entry, str):
            targets.append(parse_target(entry))
            continue
        try:
            targets.append(BenchTarget.model_validate(entry))
        except ValidationError as exc:
            raise ConfigurationError(f"{path}: target {number}: {_error_text(exc)}.") from None
    return unique_targets(targets)


def implicit_target(provider: str, model: str | None, base_url: str | None) -> BenchTarget:
    """The one target of a run without ``--target`` (provider as given; validated when the model is built)."""
    return BenchTarget.model_construct(
        name=DEFAULT_TARGET, provider=provider.strip().lower(), model=model, base_url=base_url
    )
