"""benchmarks.provenance: what a run record says about the code, prompts, tools and model it measured."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.provenance import (
    ModelIdentity,
    Provenance,
    collect_provenance,
    git_state,
    model_identity,
    package_versions,
    prompt_hashes,
    registry_hashes,
)
from benchmarks.results import ResultsWriter, RunMeta, read_results
from benchmarks.stand_ins.emulators import start_emulator
from shared.operations.sales import sales_registry
from shared.security import DEMO_CALLER, Caller

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def test_offline_provenance_has_every_field() -> None:
    provenance = collect_provenance("offline")
    assert provenance.python and provenance.platform and "CPU cores" in provenance.host
    assert {"erp-ai-harness", "langchain", "langchain-core", "langgraph", "pydantic", "SQLAlchemy"} <= set(
        provenance.packages
    )
    assert provenance.catalog_hash and len(provenance.catalog_hash) == 64
    assert provenance.tool_schema_hash and len(provenance.tool_schema_hash) == 64
    assert provenance.model is not None and provenance.model.provider == "offline"
    assert provenance.model.model == "offline-sales"
    assert provenance.model.digest and len(provenance.model.digest) == 64


def test_every_prompt_template_of_both_modes_is_hashed() -> None:
    templates = {
        f"{package}/prompts/{path.name}": hashlib.sha256(path.read_bytes()).hexdigest()
        for package in ("planner_mode", "toolcalling_mode")
        for path in Path(str(resources.files(package).joinpath("prompts"))).glob("*.md")
    }
    assert {name.split("/")[0] for name in templates} == {"planner_mode", "toolcalling_mode"}
    assert prompt_hashes() == templates


def test_prompt_hashes_find_templates_by_directory_not_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "fake_mode"
    (package / "prompts").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "prompts" / "nuevo.md").write_text("Sos un asistente.")
    (package / "prompts" / "notes.txt").write_text("not a template")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = prompt_hashes(["fake_mode"])
    assert first == {"fake_mode/prompts/nuevo.md": hashlib.sha256(b"Sos un asistente.").hexdigest()}
    (package / "prompts" / "nuevo.md").write_text("Sos un asistente amable.")
    assert prompt_hashes(["fake_mode"]) != first


def test_registry_hashes_are_stable_and_follow_what_the_caller_is_offered() -> None:
    registry = sales_registry()
    manager = registry_hashes(registry, DEMO_CALLER)
    assert manager == registry_hashes(sales_registry(), DEMO_CALLER)
    salesperson = Caller(user_id="bruno", roles=frozenset({"ventas"}))
    assert len(registry.catalog(salesperson)) < len(registry.catalog(DEMO_CALLER))
    other = registry_hashes(registry, salesperson)
    assert other[0] != manager[0] and other[1] != manager[1]


def test_package_versions_leave_missing_distributions_out() -> None:
    versions = package_versions(["pydantic", "no-such-distribution-for-erp-ai"])
    assert list(versions) == ["pydantic"]


@needs_git
def test_git_state_of_a_repository_reports_commit_and_dirty_flag(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True)
        return done.stdout.strip()

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (tmp_path / "a.txt").write_text("uno")
    git("add", "a.txt")
    git("commit", "-q", "-m", "one")
    commit, dirty, note = git_state(tmp_path)
    assert commit == git("rev-parse", "HEAD") and dirty is False and note is None
    (tmp_path / "untracked.txt").write_text("not counted")
    assert git_state(tmp_path)[1] is False
    (tmp_path / "a.txt").write_text("dos")
    assert git_state(tmp_path)[1] is True


@needs_git
def test_git_state_outside_a_repository_or_below_its_top_is_none_with_a_note(tmp_path: Path) -> None:
    commit, dirty, note = git_state(tmp_path)
    assert commit is None and dirty is None and note is not None and note.startswith("git:")
    subprocess.run(["git", "-C", str(tmp_path), "init", "-q"], check=True)
    inner = tmp_path / "site-packages"  # an installed copy inside some other checkout
    inner.mkdir()
    commit, _, note = git_state(inner)
    assert commit is None and note is not None and "not the top" in note


def test_git_state_without_git_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert git_state(tmp_path) == (None, None, "git: not installed")


# -- model identity over a mock transport ----------------------------------------------------------------


def _ollama_handler(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/api/tags":
        models = [{"name": "other:1b", "digest": "b" * 64}, {"name": "qwen2.5:7b", "digest": "a" * 64}]
        return httpx.Response(200, json={"models": models})
    if request.url.path == "/api/show":
        assert json.loads(request.content) == {"model": "qwen2.5:7b"}
        return httpx.Response(
            200,
            json={
                "modified_at": "2025-05-02T10:00:00Z",
                "details": {"family": "qwen2", "parameter_size": "7.6B", "quantization_level": "Q4_K_M"},
                "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768, "x.y": 1},
            },
        )
    return httpx.Response(404)


def test_ollama_identity_reads_digest_from_tags_and_details_from_show() -> None:
    identity, note = model_identity(
        "ollama", "qwen2.5:7b", "http://ollama.test:11434", transport=httpx.MockTransport(_ollama_handler)
    )
    assert note is None
    assert identity.digest == "a" * 64
    assert identity.modified_at == "2025-05-02T10:00:00Z"
    assert identity.details["quantization_level"] == "Q4_K_M"
    assert identity.details["model_info"] == {"general.architecture": "qwen2", "qwen2.context_length": 32768}


def test_ollama_host_without_scheme_is_read_like_the_client_does(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return _ollama_handler(request)

    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11434")
    identity, _ = model_identity("ollama", "qwen2.5:7b", transport=httpx.MockTransport(handler))
    assert identity.base_url == "http://gpu-box:11434"
    assert seen[0] == "http://gpu-box:11434/api/tags"


def test_openai_identity_reads_the_models_entry() -> None:
    entry = {"id": "qwen2.5-7b.gguf", "created": 1, "owned_by": "llamacpp", "meta": {"n_params": 7615616512}}

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/models"
        return httpx.Response(200, json={"object": "list", "data": [{"id": "other"}, entry]})

    transport = httpx.MockTransport(handler)
    identity, note = model_identity(
        "openai", "qwen2.5-7b.gguf", "http://127.0.0.1:8080/v1", api_key="sk-local", transport=transport
    )
    assert note is None and identity.digest is None
    assert identity.details == entry


def _raise(error: type[httpx.TransportError]) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error("no answer", request=request)

    return handler


@pytest.mark.parametrize(
    ("handler", "reason"),
    [
        (lambda request: httpx.Response(500, json={"error": "boom"}), "HTTP 500"),
        (lambda request: httpx.Response(200, text="not json"), "unexpected reply"),
        (_raise(httpx.ReadTimeout), "ReadTimeout"),
        (_raise(httpx.ConnectError), "ConnectError"),
    ],
)
def test_a_provider_that_fails_leaves_the_identity_bare_with_a_note(handler: Any, reason: str) -> None:
    transport = httpx.MockTransport(handler)
    identity, note = model_identity("ollama", "llama3.1:8b", "http://x.test", transport=transport)
    assert identity == ModelIdentity(provider="ollama", model="llama3.1:8b", base_url="http://x.test")
    assert note is not None and reason in note


def test_collect_provenance_never_raises_on_an_unreachable_provider() -> None:
    provenance = collect_provenance("ollama", transport=httpx.MockTransport(_raise(httpx.ConnectError)))
    assert provenance.model is not None and provenance.model.digest is None
    assert any("model identity from ollama" in note for note in provenance.notes)
    assert provenance.prompt_hashes and provenance.catalog_hash


# -- model identity from the repo's emulators ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "model", "path", "details"),
    [
        ("ollama", "llama3.1:8b", "", {"family": "llama"}),
        ("openai", "gpt-4o-mini", "/v1", {"id": "gpt-4o-mini"}),
        ("gemini", "gemini-2.5-flash", "", {"version": "001"}),
    ],
)
def test_each_emulator_tells_the_models_identity(
    kind: str, model: str, path: str, details: dict[str, str]
) -> None:
    with start_emulator(kind) as base_url:  # type: ignore[arg-type]
        identity, note = model_identity(kind, model, f"{base_url}{path}", api_key="x", timeout=5)
    assert note is None and identity.stand_in  # the emulator says the offline model answers behind it
    assert details.items() <= identity.details.items()
    if kind == "ollama":
        assert identity.digest is not None and len(identity.digest) == 64 and identity.modified_at is not None
    if kind == "openai":
        assert {"created", "owned_by"} <= set(identity.details)


# -- the run record ------------------------------------------------------------------------------------------


def test_run_record_keeps_provenance_and_old_files_still_load(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"kind": "run", "provider": "offline", "modes": ["planner"]}) + "\n")
    assert read_results(path).meta.provenance is None
    provenance = Provenance(git_commit="abc", git_dirty=False, prompt_hashes={"p.md": "0" * 64})
    path.unlink()
    ResultsWriter(path).write(RunMeta(provenance=provenance, warmup=2))
    meta = read_results(path).meta
    assert meta.provenance == provenance and meta.warmup == 2
