"""The offline model reads only what it is sent: it imports no ERP, registry, memory or benchmark code.

Its knowledge of the ERP comes from the messages, tools and response format of each call; a module that
imported the registry or the scenarios could answer from them instead, and the benchmark would measure a
model that sees more than a real one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import benchmarks.stand_ins as stand_ins

ROOT = Path(stand_ins.__file__).parent
MODULES = sorted([*ROOT.glob("*.py"), *(ROOT / "offline").glob("*.py")])
ALLOWED = ("benchmarks.stand_ins.", "shared.errors", "shared.llm.factory", "shared.llm.tokens", "shared.text")
"""Project modules the stand-ins may import: each other, the error tree, the network providers' factory
(which :func:`benchmarks.stand_ins.build_model` passes them on to), the token ruler, text helpers."""


def project_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    roots = ("benchmarks", "shared", "planner_mode", "toolcalling_mode")
    return {name for name in names if name.split(".")[0] in roots}


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_a_stand_in_module_imports_only_stand_ins_and_generic_helpers(path: Path) -> None:
    assert {name for name in project_imports(path) if not name.startswith(ALLOWED)} == set()


def test_the_check_sees_the_offline_model_and_its_imports() -> None:
    assert len(MODULES) >= 10
    assert "shared.text" in project_imports(ROOT / "offline" / "_understand.py")
