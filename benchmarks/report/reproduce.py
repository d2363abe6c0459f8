"""The ``erp-ai bench`` command line that reproduces a run, rebuilt from the settings its ``run`` line
recorded (provider or targets, modes, scenario files, tags, repetitions, warm-up, bounds, switches)."""

from __future__ import annotations

import shlex
from urllib.parse import urlparse

from benchmarks.results import RunMeta

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts of a local OpenAI-compatible server, which accepts any API key."""


def _flag(name: str, value: object) -> list[str]:
    return [name, str(value)]


def bench_arguments(meta: RunMeta) -> list[str]:
    """The ``erp-ai bench`` arguments of the run, each option only where it differs from the default or
    bounds the run (``--max-tokens``, ``--timeout``)."""
    args = ["erp-ai", "bench"]
    if meta.targets:
        for target in meta.targets:
            args += _flag("--target", target.spec)
    else:
        args += _flag("--provider", meta.provider)
        args += _flag("--model", meta.model) if meta.model else []
        args += _flag("--base-url", meta.base_url) if meta.base_url else []
    args += _flag("--modes", ",".join(meta.modes)) if meta.modes else []
    for path in meta.scenario_paths:
        args += _flag("--scenarios", path)
    for tag in meta.tags:
        args += _flag("--tag", tag)
    args += _flag("--repeat", meta.repeat) if meta.repeat != 1 else []
    args += _flag("--warmup", meta.warmup) if meta.warmup else []
    args += _flag("--concurrency", meta.concurrency) if meta.concurrency != 1 else []
    args += _flag("--latency-profile", meta.latency_profile) if meta.latency_profile else []
    args += ["--structured"] if meta.structured else []
    args += [] if meta.tool_call_recovery else ["--no-tool-call-recovery"]
    args += ["--no-prompt-cache"] if meta.any_offline and meta.prompt_cache is False else []
    args += _flag("--max-tokens", meta.max_tokens) if meta.max_tokens is not None else []
    args += _flag("--timeout", f"{meta.timeout:g}") if meta.timeout is not None else []
    return args


def _environment(meta: RunMeta) -> str:
    """``OPENAI_API_KEY=unused `` for a local OpenAI-compatible server (any key works), else nothing."""
    urls = [t.base_url for t in meta.targets if t.provider == "openai"] if meta.targets else []
    if not meta.targets and meta.provider == "openai":
        urls = [meta.base_url]
    if urls and all(url and urlparse(url).hostname in LOCAL_HOSTS for url in urls):
        return "OPENAI_API_KEY=unused "
    return ""


def bench_command(meta: RunMeta) -> str:
    """The shell command that runs the same benchmark again."""
    return _environment(meta) + shlex.join(bench_arguments(meta))


def reproduce_text(meta: RunMeta) -> str:
    """Where to run :func:`bench_command` from: the recorded commit (and whether it had local changes)."""
    provenance = meta.provenance
    if provenance is None or provenance.git_commit is None:
        return "From a checkout of the code the run used (its commit was not recorded):"
    dirty = " (the run had uncommitted changes on top of it)" if provenance.git_dirty else ""
    return f"From a checkout at commit `{provenance.git_commit[:12]}`{dirty}:"
