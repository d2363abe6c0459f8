"""The slim install: the engine runs without any extra, and a missing extra is one line naming it.

``pip install erp-ai-harness`` installs the engine's dependencies only; ``[server]``, ``[ollama]``,
``[gemini]``, ``[openai]``, ``[bench]``, ``[all]`` and ``[dev]`` add the rest (``shared/extras.py``). The
subprocess tests start a fresh interpreter, so what they see in ``sys.modules`` is what an application that
embeds ``planner_mode`` pays for; a meta-path blocker stands in for an extra that is not installed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from shared.errors import ConfigurationError
from shared.extras import EXTRA_MODULES, install_hint, require, require_extra

ROOT = Path(__file__).resolve().parent.parent

PROVIDER_SDKS = (
    "langchain_ollama",
    "langchain_google_genai",
    "langchain_openai",
    "google",
    "openai",
    "ollama",
)
EXTRA_ONLY = ("fastapi", "starlette", "uvicorn", "typer", "yaml", *PROVIDER_SDKS)
"""Top-level modules no engine-only application may load (``yaml`` comes with langchain-core, yet the
engine must not need it)."""

BLOCKER = """
import importlib.abc, sys

class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
for _name in list(sys.modules):
    if _name.partition(".")[0] in BLOCKED:
        del sys.modules[_name]
"""


def run_python(
    code: str, tmp_path: Path, *, blocked: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (in ``tmp_path``), with the ``blocked`` modules not installed."""
    prelude = f"BLOCKED = {set(blocked)!r}\n{BLOCKER}" if blocked else ""
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"},
    )


def loaded(result: subprocess.CompletedProcess[str]) -> set[str]:
    """The top-level modules the child printed as its last stdout line (a JSON list)."""
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


# -- the engine alone --------------------------------------------------------------------------------------


def test_importing_the_engines_loads_no_fastapi_and_no_provider_sdk(tmp_path: Path) -> None:
    result = run_python(
        """
        import json, sys
        import planner_mode, toolcalling_mode
        assert "fastapi" not in sys.modules
        print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules})))
        """,
        tmp_path,
    )
    assert loaded(result) & set(EXTRA_ONLY) == set()


def test_both_engines_answer_a_turn_with_the_offline_model_and_no_extra_installed(tmp_path: Path) -> None:
    result = run_python(
        """
        import json, sys
        from planner_mode import PlannerAI, PlannerEngine
        from toolcalling_mode import ToolCallingEngine
        from shared.erp.database import open_demo_erp
        from benchmarks.stand_ins import build_model
        from shared.memory.store import MemoryStore
        from shared.operations.sales import sales_registry
        from shared.security import DEMO_CALLER

        erp, store, registry = open_demo_erp("sqlite://"), MemoryStore("sqlite://"), sales_registry()
        engines = [
            PlannerEngine(registry, erp, store, PlannerAI(build_model("offline"))),
            ToolCallingEngine(registry, erp, store, build_model("offline")),
        ]
        for number, engine in enumerate(engines):
            result = engine.ask(f"c{number}", "¿Cuánto vendimos en 2025?", caller=DEMO_CALLER)
            assert result.failure is None and "850" in result.answer, result
        print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules})))
        """,
        tmp_path,
        blocked=(*EXTRA_ONLY, "rich", "click"),
    )
    assert loaded(result) & {*EXTRA_ONLY, "rich", "click"} == set()


# -- a missing extra is one line naming it ------------------------------------------------------------------


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The child's error output, which must be exactly one line."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_create_app_without_the_server_extra_says_which_extra_to_install(tmp_path: Path) -> None:
    result = run_python(
        """
        import planner_mode  # the engine imports fine without FastAPI
        from shared.errors import ConfigurationError
        try:
            from planner_mode import create_app
        except ConfigurationError as error:
            print(error)
        """,
        tmp_path,
        blocked=("fastapi",),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "The AI server (planner_mode.create_app) needs the 'server' extra: "
        "pip install 'erp-ai-harness[server]'\n"
    )


@pytest.mark.parametrize(
    ("provider", "module"),
    [("ollama", "langchain_ollama"), ("gemini", "langchain_google_genai"), ("openai", "langchain_openai")],
)
def test_a_provider_without_its_extra_says_which_extra_to_install(
    provider: str, module: str, tmp_path: Path
) -> None:
    result = run_python(
        f"""
        from shared.errors import ConfigurationError
        from shared.llm.factory import build_chat_model
        try:
            build_chat_model({provider!r}, api_key="k")
        except ConfigurationError as error:
            print(error)
        """,
        tmp_path,
        blocked=(module,),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"The {provider!r} model provider needs the {provider!r} extra: "
        f"pip install 'erp-ai-harness[{provider}]'"
    )


def test_the_erp_ai_command_without_the_bench_extra_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    result = run_python(
        "from benchmarks.cli.entry import main\nmain(['--help'])", tmp_path, blocked=("typer", "rich", "yaml")
    )
    assert result.returncode == 2
    assert one_line_error(result) == (
        "Error: The erp-ai command needs the 'bench' extra: pip install 'erp-ai-harness[bench]'"
    )
    assert result.stdout == ""


def test_the_erp_ai_command_runs_through_the_entry_module(tmp_path: Path) -> None:
    result = run_python("from benchmarks.cli.entry import main\nmain(['--version'])", tmp_path)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"erp-ai-harness \S+\n", result.stdout)


def test_the_cli_starts_without_provider_sdks_and_names_the_extra_of_the_provider_chosen(
    tmp_path: Path,
) -> None:
    result = run_python(
        """
        from benchmarks.cli.entry import main
        main(["ask", "hola", "--demo", "--db-url", "sqlite://", "--provider", "ollama"])
        """,
        tmp_path,
        blocked=PROVIDER_SDKS,
    )
    assert result.returncode == 2
    assert "The 'ollama' model provider needs the 'ollama' extra: pip install 'erp-ai-harness[ollama]'" in (
        " ".join(result.stderr.split())
    )


def test_erp_ai_serve_without_the_server_extra_says_which_extra_to_install(tmp_path: Path) -> None:
    result = run_python(
        "from benchmarks.cli.entry import main\nmain(['serve'])", tmp_path, blocked=("fastapi", "uvicorn")
    )
    assert result.returncode == 2
    assert "erp-ai serve needs the 'server' extra: pip install 'erp-ai-harness[server]'" in " ".join(
        result.stderr.split()
    )


def test_require_returns_the_module_or_raises_one_line() -> None:
    assert require("json", "bench", "Anything").__name__ == "json"
    with pytest.raises(ConfigurationError) as caught:
        require("no_such_module_anywhere", "server", "The thing")
    assert str(caught.value) == "The thing needs the 'server' extra: pip install 'erp-ai-harness[server]'"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    require_extra("bench", "The erp-ai command")  # installed in the test environment
    assert install_hint("all") == "pip install 'erp-ai-harness[all]'"


# -- pyproject.toml ------------------------------------------------------------------------------------------


def project() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        table: dict[str, object] = tomllib.load(file)["project"]
    return table


def requirement_name(requirement: str) -> str:
    """``"fastapi>=0.110,<1"`` → ``"fastapi"``; ``"erp-ai-harness[server]"`` → ``"erp-ai-harness"``."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def resolved(extra: str, extras: dict[str, list[str]]) -> set[str]:
    """The packages ``extra`` installs, following its references to other extras of the project."""
    names: set[str] = set()
    for requirement in extras[extra]:
        if requirement_name(requirement) == "erp-ai-harness":
            inner = re.search(r"\[(.*)\]", requirement)
            assert inner, requirement
            for other in inner.group(1).split(","):
                names |= resolved(other.strip(), extras)
        else:
            names.add(requirement_name(requirement))
    return names


def test_the_engine_install_is_langchain_pydantic_sqlalchemy_and_httpx_only() -> None:
    dependencies = project()["dependencies"]
    assert isinstance(dependencies, list)
    assert {requirement_name(r) for r in dependencies} == {
        "langchain",
        "langchain-core",
        "langgraph",
        "pydantic",
        "sqlalchemy",
        "httpx",
    }


def test_every_extra_exists_and_all_covers_the_others() -> None:
    extras = project()["optional-dependencies"]
    assert isinstance(extras, dict)
    assert set(extras) == {"server", "ollama", "gemini", "openai", "bench", "postgres", "all", "dev"}
    everything = set().union(*(resolved(extra, extras) for extra in extras if extra not in ("all", "dev")))
    assert resolved("all", extras) == everything
    assert resolved("server", extras) <= resolved("bench", extras)  # erp-ai serve is a bench command
    assert not {"langchain-ollama", "langchain-google-genai", "langchain-openai"} & resolved("bench", extras)


def test_each_module_shared_extras_names_comes_from_its_extra() -> None:
    extras = project()["optional-dependencies"]
    assert isinstance(extras, dict)
    assert set(EXTRA_MODULES) == set(extras) - {"all", "dev"}
    distributions = packages_distributions()
    for extra, modules in EXTRA_MODULES.items():
        for module in modules:
            provided_by = {requirement_name(name) for name in distributions[module]}
            assert provided_by & resolved(extra, extras), (extra, module, provided_by)


def test_the_console_script_checks_the_bench_extra_first() -> None:
    scripts = project()["scripts"]
    assert scripts == {"erp-ai": "benchmarks.cli.entry:main"}
    source = (ROOT / "benchmarks" / "cli" / "entry.py").read_text(encoding="utf-8")
    imports = re.findall(r"^(?:from|import) (\S+)", source, flags=re.MULTILINE)
    assert imports == ["__future__", "sys", "shared.errors", "shared.extras"]


def test_the_makefile_installs_every_extra_and_the_dev_tools() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "pip install --quiet -e '.[all,dev]'" in makefile
