"""Which scorer scored a run: a hash of the code that judges turns and of the packaged expectations.

Recorded in every run line (``RunMeta.scorer_version``) by ``bench`` and ``rescore``; ``report`` re-scores a
run recorded by another version before it renders a figure, so no figure of an old scorer reads as current.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import benchmarks
import shared

__all__ = ["SCORER_SOURCES", "scorer_version"]

_BENCHMARKS = Path(benchmarks.__file__).parent
_SHARED = Path(shared.__file__).parent

SCORER_SOURCES: tuple[Path, ...] = (
    _BENCHMARKS / "scoring",
    _BENCHMARKS / "run_turns.py",
    _BENCHMARKS / "scenarios",
    _SHARED / "figures.py",
    _SHARED / "grounding.py",
    _SHARED / "text.py",
)
"""What a verdict depends on besides the recorded turn: the checks, how a row is scored, the scenarios'
expectations, and the shared readers of figures and names the checks use."""


@functools.cache
def scorer_version() -> str:
    """12 hex digits of the SHA-256 of :data:`SCORER_SOURCES` (their Python and YAML files, by path)."""
    digest = hashlib.sha256()
    for source in SCORER_SOURCES:
        files = sorted(source.rglob("*")) if source.is_dir() else [source]
        for file in files:
            if file.suffix in (".py", ".yaml") and file.is_file():
                digest.update(file.relative_to(source.parent).as_posix().encode())
                digest.update(file.read_bytes())
    return digest.hexdigest()[:12]
