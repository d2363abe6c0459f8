"""``docs/design.md`` cannot silently rot: every name, path and diagram call it shows exists in the code.

What is checked, in backticks (prose words and JSON keys are not):

- qualified names of the project (``shared.failures.markdown_table()``, ``planner_mode.engine.PlannerEngine``)
  import, attribute by attribute;
- ``Class.attribute`` names whose class the project defines (``HttpAIClient.astream_respond``) resolve;
- bare class names (``MemoryStore``) and calls (``open_erp(url)``) are project names, names of the embedding
  example (``main()``), or one of the few outside names the page is allowed to mention
  (:data:`OUTSIDE_NAMES`);
- environment variables and constants (``ERP_AI_TIMEOUT``) occur in the packages' source;
- paths (``shared/bounds.py``, ``tests/**/__init__.py``) and relative Markdown links exist.

In each Mermaid ``sequenceDiagram``, every participant is one of :data:`PARTICIPANTS`, and every message that
reads as a call (``E->>S: record_turn(...)``) names an attribute of the receiving participant, or a function
its module uses (a self-call such as ``E->>E: validate_plan(...)``). A reply written as ``Name(...)`` names a
project class. Finally the failure table is the one :func:`shared.failures.markdown_table` generates.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from shared.failures import markdown_table

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
EXAMPLE = ROOT / "docs" / "examples" / "embed_planner.py"
PACKAGES = ("shared", "planner_mode", "toolcalling_mode", "benchmarks")
IMPORTABLE = (*PACKAGES, "tests")
"""First parts of the qualified names the page may use (``tests.fakes.FunctionChatModel``)."""
NAMESPACE_PACKAGES = ("shared", "planner_mode", "toolcalling_mode")
"""Packages whose public names the page may use unqualified."""

PARTICIPANTS: dict[str, str | None] = {
    "Your application": None,
    "PlannerEngine": "planner_mode.engine.PlannerEngine",
    "ToolCallingEngine": "toolcalling_mode.engine.ToolCallingEngine",
    "MemoryStore": "shared.memory.store.MemoryStore",
    "OperationRegistry": "shared.operations.registry.OperationRegistry",
    "AIClient": "planner_mode.client.AIClient",
    "Chat model": "langchain_core.language_models.BaseChatModel",
    "Agent": "langgraph.graph.state.CompiledStateGraph",
}
"""What each diagram participant stands for (``None``: not the project's code)."""

OUTSIDE_NAMES = {
    "Annotated",
    "BaseCallbackHandler",
    "BaseChatModel",
    "RunnableConfig",
    "StreamingResponse",
    "NullHandler",
    "TypeError",
}
"""Names from Python, LangChain and FastAPI the page mentions."""


def design() -> str:
    return DESIGN.read_text(encoding="utf-8")


def backticked(text: str) -> list[str]:
    """Inline code spans outside fenced blocks, their line breaks as spaces."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]  # a span may wrap


def mermaid_blocks(text: str) -> list[str]:
    return re.findall(r"^```mermaid\n(.*?)^```", text, flags=re.S | re.M)


def resolve(dotted: str) -> Any:
    """Import the longest importable module prefix of ``dotted``, then follow the rest as attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            target = attribute_of(target, attribute)
        return target
    raise ModuleNotFoundError(dotted)


def attribute_of(target: Any, name: str) -> Any:
    """``getattr``, also for pydantic fields and dataclass fields (not class attributes)."""
    if hasattr(target, name):
        return getattr(target, name)
    fields = getattr(target, "model_fields", None) or getattr(target, "__dataclass_fields__", None) or {}
    if name in fields:
        return fields[name]
    raise AttributeError(f"{target!r} has no attribute {name!r}")


@cache
def project_names() -> dict[str, Any]:
    """Every public class and function defined in (or exported by) a module of the namespace packages."""
    names: dict[str, Any] = {}
    for package_name in NAMESPACE_PACKAGES:
        package = importlib.import_module(package_name)
        modules: list[ModuleType] = [package]
        for info in pkgutil.walk_packages(package.__path__, f"{package_name}."):
            modules.append(importlib.import_module(info.name))
        for module in modules:
            for name, value in vars(module).items():
                if not name.startswith("_") and (inspect.isclass(value) or inspect.isfunction(value)):
                    names.setdefault(name, value)
    return names


@cache
def example_names() -> set[str]:
    """The top-level names the embedding example defines (read, not imported: it registers operations)."""
    tree = ast.parse(EXAMPLE.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names


@cache
def source_text() -> str:
    """Every Python source file of the packages, concatenated."""
    return "\n".join(
        path.read_text(encoding="utf-8")
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    )


def check_reference(code: str) -> None:
    """Raise unless the code span ``code`` names something that exists (see the module docstring)."""
    if "/" in code:
        path = code.split(":", 1)[0].rstrip("/")
        if path.split("/", 1)[0] in (*PACKAGES, "tests", "docs"):
            assert list(ROOT.glob(path)), f"no such path: {path}"
        return
    head = re.match(r"@?([A-Za-z_][\w.]*)(\(.*\))?$", code)
    if head is None:
        return  # prose, JSON, a command line
    dotted, call = head.group(1), head.group(2)
    first = dotted.split(".", 1)[0]
    if re.fullmatch(r"[A-Z][A-Z0-9_]+", dotted):
        assert dotted in source_text(), f"{dotted} occurs nowhere in the code"
    elif first in IMPORTABLE:
        resolve(dotted)
    elif first in project_names():
        target = project_names()[first]
        for attribute in dotted.split(".")[1:]:
            target = attribute_of(target, attribute)
    elif "." not in dotted and (first[:1].isupper() or call is not None):
        known = first in OUTSIDE_NAMES or first in example_names()
        assert known, f"{code!r}: {first} is neither a project name nor an allowed outside name"


def test_the_page_still_describes_the_architecture() -> None:
    text = design()
    assert len(mermaid_blocks(text)) == 2, "one sequence diagram per mode"
    for heading in (
        "## Module map",
        "## One turn in planner mode",
        "## One turn in tool-calling mode",
        "## Failure policy",
        "## Concurrency",
        "## Security",
        "## Observability",
        "## Streaming",
        "## Production defaults",
        "## Embedding planner_mode",
    ):
        assert heading in text


@pytest.mark.parametrize("code", sorted(set(backticked(design()))))
def test_every_name_and_path_in_backticks_exists(code: str) -> None:
    check_reference(code)


def test_relative_links_exist() -> None:
    for target in re.findall(r"\]\(([^)#:]+)\)", design()):
        assert (DESIGN.parent / target).exists(), target


def diagram_checks(block: str) -> list[tuple[str, str, str, str]]:
    """``(arrow, receiver label, name, line)`` for each message of ``block`` that reads as a call or reply."""
    labels: dict[str, str] = {}
    found: list[tuple[str, str, str, str]] = []
    for raw in block.splitlines():
        line = raw.strip()
        participant = re.match(r"participant (\w+) as (.+)$", line)
        if participant:
            alias, label = participant.groups()
            assert label in PARTICIPANTS, f"unknown participant {label!r}: add it to PARTICIPANTS"
            labels[alias] = label
            continue
        message = re.match(r"(\w+)(-?->>)(\w+): ([A-Za-z_]\w*)\(", line)
        if message:
            sender, arrow, receiver, name = message.groups()
            assert sender in labels and receiver in labels, line
            found.append((arrow, labels[receiver], name, line))
    return found


@pytest.mark.parametrize("index", [0, 1])
def test_every_call_in_a_sequence_diagram_exists_on_its_receiver(index: int) -> None:
    checks = diagram_checks(mermaid_blocks(design())[index])
    assert len(checks) >= 8
    for arrow, receiver, name, line in checks:
        if arrow == "-->>" or PARTICIPANTS[receiver] is None:  # a reply or an event: a project class
            assert name in project_names(), line
            continue
        target = resolve(PARTICIPANTS[receiver] or "")
        module = importlib.import_module(target.__module__)
        assert hasattr(target, name) or hasattr(module, name), line


def test_the_checks_catch_a_rotten_reference() -> None:
    with pytest.raises((AttributeError, ModuleNotFoundError)):
        check_reference("shared.memory.store.MemoryStore.record_turns")
    with pytest.raises(AssertionError):
        check_reference("shared/memory/storage.py")
    with pytest.raises(AssertionError):
        check_reference("PlannerMachine")
    with pytest.raises(AttributeError):
        check_reference("PlannerEngine.answer")
    with pytest.raises(AssertionError):
        check_reference("ERP_AI_NO_SUCH_SETTING")
    check_reference("TurnResult.stale_state")  # a pydantic field counts


def test_the_failure_table_is_the_generated_one() -> None:
    text = design()
    start = text.index("<!-- FAILURE-TABLE:START")
    table = text[text.index("\n", start) + 1 : text.index("<!-- FAILURE-TABLE:END -->")]
    assert table.strip() == markdown_table().strip()
