"""A results file is input: whatever it holds, `erp-ai report` and `rescore` give a one-line error or safe
output, write nothing outside their block or `--out`, and leave the previous report intact."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.report import write_whole
from benchmarks.report.readme import REAL_MODEL_BLOCK, end_marker, start_marker
from benchmarks.results import RunMeta
from tests.benchmarks.report.sample_results import rows, write_results

README = f"# Proyecto\n\n{start_marker(REAL_MODEL_BLOCK)}\nfiguras\n{end_marker(REAL_MODEL_BLOCK)}\n\nFin.\n"


def results_file(
    directory: Path, *, meta: dict[str, Any] | None = None, row: dict[str, Any] | None = None
) -> Path:
    """A small offline run in ``directory``, its run line updated with ``meta`` and its first turn with
    ``row`` (raw JSON values: anything a file can hold)."""
    path = write_results(directory / "results.jsonl", RunMeta(modes=["planner"], turns=12), rows()[:12])
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    lines[0].update(meta or {})
    lines[1].update(row or {})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def report(app: typer.Typer, path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["report", str(path), *args])
    return result.exit_code, result.output


REFUSED: dict[str, Callable[[Path], Path]] = {
    "a regime no run has": lambda d: results_file(d, meta={"latency_profile": "real-model"}),
    "a host holding a marker": lambda d: results_file(
        d, meta={"host": f"x\n{end_marker(REAL_MODEL_BLOCK)}\n# Hacked\n{start_marker(REAL_MODEL_BLOCK)}"}
    ),
    "tokens past any run": lambda d: results_file(d, row={"input_tokens": 10**400}),
    "a negative time": lambda d: results_file(d, row={"model_ms": -5}),
    "repeat 10^30": lambda d: results_file(d, meta={"repeat": 10**30}),
    "turns -1": lambda d: results_file(d, meta={"turns": -1}),
}


@pytest.mark.parametrize("make", list(REFUSED.values()), ids=list(REFUSED))
def test_a_results_file_no_run_writes_is_one_line_error_and_touches_no_readme(
    app: typer.Typer, tmp_path: Path, make: Callable[[Path], Path]
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(README, encoding="utf-8")

    code, output = report(app, make(tmp_path), "--readme", str(readme))

    said = " ".join(output.split())
    assert code == 2 and ("not a valid run record" in said or "not a valid turn record" in said), said
    assert said.count("Error:") == 1 and "pydantic" not in said and "Traceback" not in said
    assert readme.read_text(encoding="utf-8") == README
    assert not (tmp_path / "report.md").exists()


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"kind": "turn", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper"),
        ("nan", "total_ms"),
    ],
    ids=["100k-deep", "nan"],
)
def test_a_line_nested_too_deep_or_not_a_number_is_one_line_error(
    app: typer.Typer, tmp_path: Path, line: str, says: str
) -> None:
    path = results_file(tmp_path, row={"total_ms": float("nan")} if line == "nan" else None)
    if line != "nan":
        path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")

    code, output = report(app, path)

    assert code == 2 and says in output and "RecursionError" not in output and "Traceback" not in output


def test_fields_that_would_be_markup_or_terminal_codes_are_written_as_text(
    app: typer.Typer, tmp_path: Path
) -> None:
    hostile = "<!-- <script>alert(1)</script> \x1b]0;pwned\x07\x1b[2J \ud800"
    failed = {"failed": True, "failure": "model_output", "score": {"passed": False, "details": [hostile]}}
    real = {"provider": "openai", "model": "m\x1b[31mred"}
    path = results_file(tmp_path, meta=real, row={"answer": hostile, "errors": [hostile], **failed})

    code, output = report(app, path)

    assert code == 0, output
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "<script>" not in markdown and "<!--" not in markdown and "&lt;script>" in markdown
    assert "\x1b" not in markdown and "\x1b" not in output
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<script" not in html and "<!--" not in html, "no field becomes markup"
    assert "&lt;!-- &lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_symlinked_report_is_never_written_through(app: typer.Typer, tmp_path: Path) -> None:
    path = results_file(tmp_path)
    elsewhere = tmp_path / "elsewhere.html"
    elsewhere.write_text("mine", encoding="utf-8")
    (tmp_path / "report.html").symlink_to(elsewhere)

    code, output = report(app, path)

    assert code == 2 and "symbolic link" in output
    assert elsewhere.read_text(encoding="utf-8") == "mine"


def test_a_failed_write_leaves_the_previous_report_whole(tmp_path: Path) -> None:
    previous = tmp_path / "report.html"
    previous.write_text("<html>before</html>", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_whole(previous, "<html>after \ud800</html>")  # fails while writing
    assert previous.read_text(encoding="utf-8") == "<html>before</html>"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left behind


def test_a_report_is_as_readable_as_any_file_the_user_writes(tmp_path: Path) -> None:
    written, plain = tmp_path / "report.html", tmp_path / "plain.txt"
    write_whole(written, "<html></html>")
    plain.write_text("", encoding="utf-8")  # open()'s mode under this process's umask
    assert written.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


def test_rescore_never_overwrites_the_run_it_scores(app: typer.Typer, tmp_path: Path) -> None:
    path = results_file(tmp_path)
    recorded = path.read_text(encoding="utf-8")

    result = CliRunner().invoke(app, ["rescore", str(path), "--out", str(tmp_path)])

    assert result.exit_code == 2 and "--out" in result.output
    assert path.read_text(encoding="utf-8") == recorded
