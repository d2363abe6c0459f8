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


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_engine_package_names_the_benchmark_even_in_a_string(package: str) -> None:
    # importlib.import_module("benchmarks…"), an entry point's target, or a docstring sending the reader up.
    naming = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / package).rglob("*.py"))
        if "benchmarks." in path.read_text(encoding="utf-8")
    ]
    assert naming == []


def test_only_the_command_line_imports_the_command_line() -> None:
    # The CLI is the outermost layer: the benchmark's machinery it drives never reaches back into it.
    importers = [
        str(path.relative_to(ROOT))
        for package in ("shared", "planner_mode", "toolcalling_mode", "benchmarks")
        for path in sorted((ROOT / package).rglob("*.py"))
        if "cli" not in path.relative_to(ROOT).parts[1:2]
        and any(name.startswith("benchmarks.cli") for name in imported_modules(path))
    ]
    assert importers == []


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, whole (``benchmarks.cli.app``), wherever the import stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_no_entry_point_loads_benchmark_code_for_the_engine() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project.get("entry-points", {}) == {}  # the erp-ai script is the only way in, under scripts


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("from benchmarks.cli.app import app\nimport planner_mode.engine\n", encoding="utf-8")
    assert imported_packages(module) == {"benchmarks", "planner_mode"}


# -- the slim install: optional packages are imported where they are used, never when a package loads --------

OPTIONAL_MODULES = {
    "fastapi",
    "starlette",
    "uvicorn",
    "typer",
    "rich",
    "yaml",
    "langchain_ollama",
    "langchain_google_genai",
    "langchain_openai",
    "openai",
    "ollama",
    "google",
}
"""Modules of the extras (``shared/extras.py``) plus the provider SDKs under them."""

LOADED_ON_DEMAND = {
    "planner_mode/server/app.py",
    "planner_mode/server/endpoints.py",
    "planner_mode/server/protocol.py",
}
"""Modules no package ``__init__`` imports (``planner_mode.create_app`` loads the server on first access; the
server's uvicorn protocol is imported by what runs uvicorn)."""


def import_time_imports(path: Path) -> set[str]:
    """Top-level packages imported when the module loads: not inside a function, not under TYPE_CHECKING."""
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try | ast.ClassDef):
                visit(node.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


@pytest.mark.parametrize("package", ["shared", "planner_mode", "toolcalling_mode"])
def test_the_engine_packages_import_no_extra_when_they_load(package: str) -> None:
    violations = {
        str(path.relative_to(ROOT)): sorted(import_time_imports(path) & OPTIONAL_MODULES)
        for path in sorted((ROOT / package).rglob("*.py"))
        if str(path.relative_to(ROOT)) not in LOADED_ON_DEMAND
    }
    assert {path: names for path, names in violations.items() if names} == {}


def test_the_import_checker_skips_functions_and_type_checking_blocks(tmp_path: Path) -> None:
    module = tmp_path / "lazy.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "import fastapi\n"
        "if TYPE_CHECKING:\n    import typer\n"
        "def serve():\n    import uvicorn\n",
        encoding="utf-8",
    )
    assert import_time_imports(module) == {"typing", "fastapi"}
