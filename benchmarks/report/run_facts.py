"""What a report says about the run itself, beside its figures: what each mode keeps and is, whether the
offline model's prefix cache was modelled, who ran, and the provenance."""

from __future__ import annotations

from benchmarks.results import RunMeta

CONVERSATION_STATE_POLICY = (
    "Conversation state: every mode stores the state the ERP derives from the operations it ran (year, "
    "customer, product, last operations); the planner's call 2 may add its own `estado`/`memoria`; tool "
    "calling adds them only with --structured."
)
"""What each mode keeps between turns, said in every report (like for like)."""

MODE_DESCRIPTIONS = {
    "planner": (
        "The article's architecture: call 1 turns the question plus context (memory and conversation state) "
        "into a plan of operations, the ERP validates and runs them, call 2 writes the answer; at most two "
        "model calls per turn."
    ),
    "toolcalling": (
        "A LangChain agent with native tool calls: the model calls the ERP's operations as tools, as many "
        "steps as it needs; its context is memory plus conversation state, like the planner's."
    ),
    "toolcalling-full": (
        "The same tool-calling agent with the conversation's full message history as its context."
    ),
}
"""One or two sentences per mode: what the architecture is, said beside its figures."""


def mode_description(mode: str) -> str:
    return MODE_DESCRIPTIONS.get(mode, "A mode this report does not describe.")


def prefix_cache_text(meta: RunMeta) -> str | None:
    """``"prefix cache modelled: yes"`` (or ``no``, ``not recorded``) when an offline model ran."""
    if not meta.any_offline:
        return None
    value = {True: "yes", False: "no", None: "not recorded"}[meta.prompt_cache]
    return f"prefix cache modelled: {value}"


def who_ran(meta: RunMeta) -> str:
    """``"provider `openai`, model `gpt-4o-mini`"``, or ``"targets `a` (offline offline-sales), `b` (…)"``."""
    if meta.matrix:
        return "targets " + ", ".join(f"`{t.name}` ({t.label})" for t in meta.targets)
    return f"provider `{meta.provider}`" + (f", model `{meta.model}`" if meta.model else "")


def provenance_rows(meta: RunMeta) -> list[tuple[str, str]]:
    """``(what, value)`` pairs of the run's provenance (empty for files that predate it)."""
    p = meta.provenance
    if p is None:
        return []
    commit = "unknown" if p.git_commit is None else p.git_commit[:12] + (" (dirty)" if p.git_dirty else "")
    rows = [
        ("code", f"git {commit}"),
        ("python", f"{p.python} on {p.platform}"),
        ("host", p.host),
        ("packages", ", ".join(f"{name} {version}" for name, version in p.packages.items())),
    ]
    identities = (
        [(f"model {name}", identity) for name, identity in p.models.items()]
        if meta.matrix and p.models
        else [("model", p.model)]
        if p.model is not None
        else []
    )
    for what, identity in identities:
        model = f"{identity.provider} {identity.model or ''}".strip()
        if identity.base_url:
            model += f" at {identity.base_url}"
        if identity.digest:
            model += f", digest {identity.digest[:12]}"
        if identity.modified_at:
            model += f", modified {identity.modified_at}"
        details = ", ".join(f"{k} {v}" for k, v in identity.details.items() if not isinstance(v, dict))
        rows.append((what, model + (f" ({details})" if details else "")))
    rows += [(f"prompt {name}", digest[:12]) for name, digest in p.prompt_hashes.items()]
    if p.catalog_hash:
        rows.append(("operations catalog", p.catalog_hash[:12]))
    if p.tool_schema_hash:
        rows.append(("tool schemas", p.tool_schema_hash[:12]))
    if p.heldout_hash:
        rows.append(("held-out questions", p.heldout_hash[:12]))
    rows += [("note", note) for note in p.notes]
    return rows
