"""Targets of the model matrix: ``--target NAME=provider[:model][@base_url]`` and the run file
(benchmarks/targets.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.targets import (
    BenchTarget,
    load_targets_file,
    parse_target,
    parse_targets,
)
from shared.errors import ConfigurationError


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("a=offline", BenchTarget(name="a", provider="offline")),
        ("b=offline:offline-sales", BenchTarget(name="b", provider="offline", model="offline-sales")),
        (
            "llama=ollama:llama3.1:8b@http://127.0.0.1:11434",
            BenchTarget(
                name="llama", provider="ollama", model="llama3.1:8b", base_url="http://127.0.0.1:11434"
            ),
        ),
        (
            " gpt_4.o-mini = OpenAI:gpt-4o-mini@http://user:pw@127.0.0.1:8080/v1 ",
            BenchTarget(
                name="gpt_4.o-mini",
                provider="openai",
                model="gpt-4o-mini",
                base_url="http://user:pw@127.0.0.1:8080/v1",
            ),
        ),
        (
            "local=openai@http://127.0.0.1:8080/v1",
            BenchTarget(name="local", provider="openai", base_url="http://127.0.0.1:8080/v1"),
        ),
    ],
)
def test_a_spec_names_provider_model_and_base_url(spec: str, expected: BenchTarget) -> None:
    target = parse_target(spec)
    assert target == expected
    assert parse_target(target.spec) == target, "the spec round-trips"


def test_a_provider_alone_means_its_default_model() -> None:
    target = parse_target("a=offline")
    assert target.model is None and target.model_name == "offline-sales" and target.offline
    assert parse_target("l=ollama").model_name == "llama3.1:8b"
    assert parse_target("l=ollama").label == "ollama llama3.1:8b"


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("offline", "it has no '=' between the name and the provider"),
        ("=offline", "the name before '=' is empty"),
        ("a b=offline", "target name 'a b' must start with a letter or digit and use only letters"),
        ("../x=offline", "target name '../x' must start with a letter or digit"),
        ("a=", "the provider after '=' is empty"),
        ("a=mistral", "unknown provider 'mistral'; valid providers: offline, ollama, gemini, openai"),
        ("a=ollama:", "the model after ':' is empty (leave out ':' for the provider's default model)"),
        ("a=ollama@", "the base URL after '@' is empty"),
    ],
)
def test_a_bad_spec_says_what_is_wrong_and_what_to_write(spec: str, why: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        parse_target(spec)
    message = str(raised.value)
    assert message.startswith(f"Invalid --target {spec!r}: {why}")
    assert "Write NAME=provider[:model][@base_url], e.g. --target a=offline" in message


def test_target_names_must_be_unique() -> None:
    assert [t.name for t in parse_targets(["a=offline", "b=offline:offline-sales"])] == ["a", "b"]
    with pytest.raises(ConfigurationError, match="Target name 'a' is used twice"):
        parse_targets(["a=offline", "a=ollama"])


def test_a_run_file_lists_specs_and_mappings(tmp_path: Path) -> None:
    path = tmp_path / "targets.yaml"
    path.write_text(
        "targets:\n"
        "  - a=offline\n"
        "  - name: llama\n"
        "    provider: ollama\n"
        "    model: 'llama3.1:8b'\n"
        "    base_url: http://127.0.0.1:11434\n",
        encoding="utf-8",
    )
    assert load_targets_file(path) == [
        BenchTarget(name="a", provider="offline"),
        BenchTarget(name="llama", provider="ollama", model="llama3.1:8b", base_url="http://127.0.0.1:11434"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("targets: []\n", "expected 'targets:' with a list of NAME=provider[:model][@base_url] specs"),
        ("models: [a=offline]\n", "expected 'targets:'"),
        ("targets:\n  - {name: a}\n", "target 1: Field required"),
        ("targets:\n  - a=offline\n  - a=offline\n", "Target name 'a' is used twice"),
        ("targets: [\n", "not valid YAML"),
    ],
)
def test_a_bad_run_file_is_refused_with_its_name(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "targets.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError) as raised:
        load_targets_file(path)
    assert message in str(raised.value)
    with pytest.raises(ConfigurationError, match="Cannot read targets file"):
        load_targets_file(tmp_path / "missing.yaml")
