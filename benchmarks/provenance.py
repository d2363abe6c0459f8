"""Where a run's figures come from: code version, packages, machine, prompts, tool schemas and model identity.

:func:`collect_provenance` gathers a :class:`Provenance` for the ``run`` record of ``results.jsonl``, so a
reader can tell whether two runs measured the same thing. Every part is best-effort and bounded: what cannot
be collected (no git, a provider that does not answer within ``timeout`` seconds) is left ``None`` or absent,
with a line in ``notes``. The model's identity, per provider: ``offline``, the SHA-256 of the stand-in's
source files (its code is its version); ``ollama``, the weights' ``digest`` (``/api/tags``) and
``/api/show``'s details; ``openai`` (or a compatible server), the model's entry of ``/v1/models``;
``gemini``, ``/v1beta/models/{model}``. Hashes are SHA-256 hex digests of each prompt template, of the
operations catalog the demo caller is shown and of the tool schemas tool calling binds (JSON, sorted keys).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import platform
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata, resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import httpx
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from benchmarks.targets import BenchTarget
    from shared.erp.database import Erp
    from shared.operations.registry import OperationRegistry
    from shared.security import Caller

PACKAGES: tuple[str, ...] = (
    "erp-ai-harness", "langchain", "langchain-core", "langgraph", "pydantic", "SQLAlchemy", "httpx",
    "langchain-ollama", "ollama", "langchain-openai", "openai", "langchain-google-genai", "google-genai",
)  # fmt: skip
"""Distributions whose versions are recorded when installed (provider SDKs included)."""

PROMPT_PACKAGES: tuple[str, ...] = ("planner_mode", "toolcalling_mode")
"""Packages whose ``prompts/*.md`` templates are hashed."""

DEFAULT_TIMEOUT_S = 3.0
"""Bound of each request to the provider for the model's identity."""

_MODEL_INFO_KEYS = ("general.architecture", "general.parameter_count", "general.quantization_version")
"""``model_info`` keys of Ollama's ``/api/show`` worth keeping (plus any ``*.context_length``)."""


def describe_host() -> str:
    """``"2 CPU cores, x86_64, Python 3.11.7"`` for the machine running this process."""
    return f"{os.cpu_count()} CPU cores, {platform.machine()}, Python {platform.python_version()}"


class ModelIdentity(BaseModel):
    """What the provider says identifies the model that produced the figures."""

    provider: str
    model: str | None = None
    base_url: str | None = None
    digest: str | None = None
    """The weights' (or, offline, the code's) SHA-256 where the provider tells it."""
    modified_at: str | None = None
    """When the provider's copy of the model last changed (Ollama)."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Whatever else the provider reports: family, size, quantization, created, owned_by, version."""

    @property
    def stand_in(self) -> bool:
        """Whether the server said it is one of this project's emulators (the offline model answered)."""
        from benchmarks.stand_ins.emulators._backing import STAND_IN_MARKER

        return any(STAND_IN_MARKER in str(value) for value in self.details.values())


class Provenance(BaseModel):
    """Everything needed to tell whether two runs measured the same code, prompts, tools and model."""

    collected_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    git_commit: str | None = None
    git_dirty: bool | None = None
    """Whether tracked files differed from the commit (untracked files are not counted)."""
    packages: dict[str, str] = Field(default_factory=dict)
    """Installed versions of :data:`PACKAGES`; a package that is not installed is absent."""
    python: str = Field(default_factory=platform.python_version)
    platform: str = Field(default_factory=platform.platform)
    host: str = Field(default_factory=describe_host)
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    """``"planner_mode/prompts/plan_system.md"`` → SHA-256 of the file."""
    catalog_hash: str | None = None
    """SHA-256 of the operations catalog the demo caller is shown (JSON)."""
    tool_schema_hash: str | None = None
    """SHA-256 of the LangChain tool schemas tool calling binds for the demo caller (JSON)."""
    heldout_hash: str | None = None
    """SHA-256 of the packaged held-out questions (:func:`benchmarks.scenario.heldout_hash`): the set is
    frozen, so runs that report held-out accuracy on different sets are told apart."""
    model: ModelIdentity | None = None
    """The model of the run's (first) target."""
    models: dict[str, ModelIdentity] = Field(default_factory=dict)
    """Target name → its model's identity, for every target of the run (empty in files that predate
    targets)."""
    notes: list[str] = Field(default_factory=list)
    """What could not be collected, and why."""


def _sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def _json_hash(value: Any) -> str:
    return _sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def git_state(
    repo_dir: Path | None = None, *, timeout: float = 5.0
) -> tuple[str | None, bool | None, str | None]:
    """``(commit, dirty, note)`` of the checkout holding this code; ``(None, None, why)`` without one.

    The package directory must be the top of its git work tree, so an installed copy that merely sits inside
    some other repository (a virtualenv in a checkout) reports no commit rather than that repository's.
    """
    root = (repo_dir or Path(__file__).resolve().parents[1]).resolve()  # the checkout above ``benchmarks``

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=timeout, check=True
        )
        return done.stdout.strip()

    try:
        top = Path(git("rev-parse", "--show-toplevel")).resolve()
        if top != root:
            return None, None, f"git: {root} is not the top of a git work tree"
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except FileNotFoundError:
        return None, None, "git: not installed"
    except subprocess.TimeoutExpired:
        return None, None, f"git: no answer within {timeout:g} s"
    except subprocess.CalledProcessError as exc:
        return None, None, f"git: {(exc.stderr or '').strip() or 'not a git repository'}"
    return commit, dirty, None


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    """Installed versions of ``names``; missing distributions are left out."""
    versions: dict[str, str] = {}
    for name in names:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return versions


def prompt_hashes(packages: Sequence[str] = PROMPT_PACKAGES) -> dict[str, str]:
    """SHA-256 of every ``prompts/*.md`` template of ``packages``, keyed ``package/prompts/name.md``."""
    hashes: dict[str, str] = {}
    for package in packages:
        folder = resources.files(package).joinpath("prompts")
        if not folder.is_dir():
            continue
        for item in sorted(folder.iterdir(), key=lambda entry: entry.name):
            if item.is_file() and item.name.endswith(".md"):
                hashes[f"{package}/prompts/{item.name}"] = _sha256(item.read_bytes())
    return hashes


def registry_hashes(registry: OperationRegistry, caller: Caller) -> tuple[str, str]:
    """``(catalog hash, tool schema hash)`` of what ``caller`` is offered by ``registry``.

    The tools are built but never run, so they need no database: the schema depends on the operations only.
    """
    from langchain_core.utils.function_calling import convert_to_openai_tool

    catalog = [spec.model_dump(mode="json") for spec in registry.catalog(caller)]
    no_database = cast("Erp", None)  # the tools' closures hold it; building their schemas never reads it
    tools = [convert_to_openai_tool(tool) for tool in registry.langchain_tools(no_database, caller=caller)]
    return _json_hash(catalog), _json_hash(tools)


def _offline_identity(model: str | None) -> ModelIdentity:
    folder = resources.files("benchmarks.stand_ins").joinpath("offline")
    sources = sorted(
        (item for item in folder.iterdir() if item.is_file() and item.name.endswith(".py")),
        key=lambda entry: entry.name,
    )
    digest = hashlib.sha256()
    for item in sources:
        digest.update(item.name.encode("utf-8") + b"\0" + item.read_bytes() + b"\0")
    return ModelIdentity(
        provider="offline",
        model=model or "offline-sales",
        digest=digest.hexdigest(),
        details={"version": "source hash of benchmarks/stand_ins/offline/*.py", "files": len(sources)},
    )


def _ollama_identity(client: httpx.Client, model: str, base_url: str | None) -> ModelIdentity:
    url = base_url or os.environ.get("OLLAMA_HOST") or "http://127.0.0.1:11434"
    url = (url if "://" in url else f"http://{url}").rstrip("/")
    identity = ModelIdentity(provider="ollama", model=model, base_url=url)
    tags = client.get(f"{url}/api/tags")
    tags.raise_for_status()
    names = {model, f"{model}:latest"}
    for entry in tags.json().get("models", []):
        if entry.get("name") in names or entry.get("model") in names:
            identity.digest = entry.get("digest")
            identity.modified_at = entry.get("modified_at")
            break
    shown = client.post(f"{url}/api/show", json={"model": model})
    shown.raise_for_status()
    body = shown.json()
    identity.modified_at = body.get("modified_at") or identity.modified_at
    identity.digest = body.get("digest") or identity.digest
    identity.details = dict(body.get("details") or {})
    info = body.get("model_info") or {}
    kept = {k: v for k, v in info.items() if k in _MODEL_INFO_KEYS or k.endswith(".context_length")}
    if kept:
        identity.details["model_info"] = kept
    return identity


def _openai_identity(
    client: httpx.Client, model: str, base_url: str | None, api_key: str | None
) -> ModelIdentity:
    url = (base_url or "https://api.openai.com/v1").rstrip("/")
    identity = ModelIdentity(provider="openai", model=model, base_url=url)
    key = api_key or os.environ.get("OPENAI_API_KEY") or "none"
    listing = client.get(f"{url}/models", headers={"Authorization": f"Bearer {key}"})
    listing.raise_for_status()
    for entry in listing.json().get("data", []):
        if entry.get("id") == model:
            identity.details = {k: entry[k] for k in ("id", "created", "owned_by", "meta") if k in entry}
            return identity
    identity.details = {"listed": False}
    return identity


def _gemini_identity(
    client: httpx.Client, model: str, base_url: str | None, api_key: str | None
) -> ModelIdentity:
    url = (base_url or "https://generativelanguage.googleapis.com").rstrip("/")
    identity = ModelIdentity(provider="gemini", model=model, base_url=url)
    key = api_key or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
    if not key:
        identity.details = {"queried": False}
        return identity
    shown = client.get(f"{url}/v1beta/models/{model}", headers={"x-goog-api-key": key})
    shown.raise_for_status()
    body = shown.json()
    identity.details = {k: body[k] for k in ("name", "version", "displayName", "description") if k in body}
    return identity


def model_identity(
    provider: str,
    model: str | None = None,
    base_url: str | None = None,
    *,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    transport: httpx.BaseTransport | None = None,
) -> tuple[ModelIdentity, str | None]:
    """``(identity, note)``: what ``provider`` tells about ``model``; on any failure, the bare identity + why.

    ``transport`` is the injection point for tests (an ``httpx.MockTransport``); requests are bounded by
    ``timeout`` seconds each.
    """
    from benchmarks.stand_ins.models import DEFAULT_MODELS

    name = provider.strip().lower()
    chosen = model or DEFAULT_MODELS.get(name)
    bare = ModelIdentity(provider=name, model=chosen, base_url=base_url)
    if name == "offline":
        return _offline_identity(chosen), None
    if chosen is None or name not in ("ollama", "openai", "gemini"):
        return bare, f"model identity: unknown provider {provider!r}"
    try:
        with httpx.Client(timeout=timeout, transport=transport) as client:
            if name == "ollama":
                return _ollama_identity(client, chosen, base_url), None
            if name == "openai":
                return _openai_identity(client, chosen, base_url, api_key), None
            return _gemini_identity(client, chosen, base_url, api_key), None
    except httpx.HTTPStatusError as exc:
        why = f"HTTP {exc.response.status_code} from {exc.request.url}"
    except httpx.HTTPError as exc:
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    except (ValueError, TypeError, AttributeError) as exc:  # a body that is not the JSON we expect
        why = f"unexpected reply ({type(exc).__name__}: {exc})"
    return bare, f"model identity from {name}: {why}"


def collect_provenance(
    provider: str = "offline",
    model: str | None = None,
    base_url: str | None = None,
    *,
    registry: OperationRegistry | None = None,
    caller: Caller | None = None,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    transport: httpx.BaseTransport | None = None,
    repo_dir: Path | None = None,
    targets: Sequence[BenchTarget] = (),
) -> Provenance:
    """Collect the provenance of a run with ``provider``/``model``/``base_url`` (never raises).

    ``registry`` defaults to the sales registry and ``caller`` to the demo caller; ``repo_dir`` to the
    checkout this code runs from. With ``targets``, each target's provider is asked for its model's identity
    (``models``, by target name; a note per target that does not answer) and ``model`` is the first's.
    """
    from shared.security import DEMO_CALLER

    commit, dirty, note = git_state(repo_dir)
    notes = [note] if note else []
    catalog_hash = tool_hash = None
    prompts: dict[str, str] = {}
    try:
        from shared.operations.sales import sales_registry

        catalog_hash, tool_hash = registry_hashes(
            sales_registry() if registry is None else registry, caller or DEMO_CALLER
        )
    except Exception as exc:  # provenance must never abort a run
        notes.append(f"catalog/tool hashes: {type(exc).__name__}: {exc}")
    try:
        prompts = prompt_hashes()
    except Exception as exc:
        notes.append(f"prompt hashes: {type(exc).__name__}: {exc}")
    heldout: str | None = None
    try:
        from benchmarks.scenario import heldout_hash

        heldout = heldout_hash()
    except Exception as exc:
        notes.append(f"held-out hash: {type(exc).__name__}: {exc}")
    ask = functools.partial(model_identity, api_key=api_key, timeout=timeout, transport=transport)
    models: dict[str, ModelIdentity] = {}
    for target in targets:
        models[target.name], note = ask(target.provider, target.model, target.base_url)
        notes += [f"target {target.name}: {note}"] if note else []
    if targets:
        identity = models[targets[0].name]
    else:
        identity, note = ask(provider, model, base_url)
        notes += [note] if note else []
    return Provenance(
        git_commit=commit,
        git_dirty=dirty,
        packages=package_versions(),
        prompt_hashes=prompts,
        catalog_hash=catalog_hash,
        tool_schema_hash=tool_hash,
        heldout_hash=heldout,
        model=identity,
        models=models,
        notes=notes,
    )
