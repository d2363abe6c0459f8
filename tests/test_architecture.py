"""Dependency direction: benchmarks → planner_mode, toolcalling_mode → shared; never back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FORBIDDEN: dict[str, set[str]] = {
    "shared": {"planner_mode", "toolcalling_mode", "benchmarks"},
    "planner_mode": {"toolcalling_mode", "benchmarks"},
    "toolcalling_mode": {"planner_mode", "benchmarks"},
}


def imported_packages(path: Path) -> set[str]:
    """Top-level packages a module imports (absolute imports only; the project uses no relative ones)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_never_imports_the_layers_above_it(package: str) -> None:
    violations = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & FORBIDDEN[package])
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    assert {path: names for path, names in violations.items() if names} == {}


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("from benchmarks.cli import app\nimport planner_mode.engine\n", encoding="utf-8")
    assert imported_packages(module) == {"benchmarks", "planner_mode"}
