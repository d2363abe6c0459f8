"""The README's library example runs as written on a fresh clone (offline model, demo ERP, default store)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def library_example() -> str:
    """The Python block of the README's "planner_mode as a library" section."""
    section = README.read_text(encoding="utf-8").split("## planner_mode as a library", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found, "the section has a Python example"
    return found.group(1)


def test_the_readme_library_example_runs_as_written(
    erp_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ERP_AI_DB_URL", erp_db_url)  # the session's demo ERP (a fresh clone creates its own)
    monkeypatch.setenv("ERP_AI_MEMORY_URL", f"sqlite:///{tmp_path / 'memory.sqlite3'}")

    exec(compile(library_example(), str(README), "exec"), {"__name__": "readme_example"})

    printed = capsys.readouterr().out
    assert "₲" in printed and " 2 " in printed  # an answer with the ERP's figures, in two model calls
    assert "ventas_anuales" in printed and "mejor_cliente" in printed
