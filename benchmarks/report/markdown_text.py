"""How ``report.md`` prints text: the escaping every value gets and the environment of its templates.

A results file is untrusted input, and so is anything read from it. Every ``{{ value }}`` a Markdown template
prints goes through the environment's ``finalize`` (:func:`printed`): one line, pipes escaped, no control
character, no ``<`` that could open an HTML tag or comment. Only a macro's output, whose values each went
through ``finalize`` already, is printed as lines, marked so with the ``block`` filter."""

from __future__ import annotations

import re
from functools import cache

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from benchmarks.report import (
    findings,
    matrix_table,
    run_facts,
    runs,
    splits,
    tables,
    time_breakdown,
    verdict_table,
)
from shared.bounds import clean_text

__all__ = ["cell", "column_alignment", "environment", "markdown_safe", "printed", "render_table"]

_TAG_OPENING = re.compile(r"<(?=[A-Za-z!/?])")
"""A ``<`` that could open an HTML tag, comment or declaration (``p < 0.001`` cannot)."""


def markdown_safe(text: str) -> str:
    """``text`` without control characters (a terminal's escape codes) and with every ``<`` that could open a
    tag written as ``&lt;`` (shown the same): no recorded field can open an HTML tag or comment in a Markdown
    file (``<script>``, a ``<!--`` that would hide the rest, a README marker). Lines stay as they are."""
    return _TAG_OPENING.sub("&lt;", clean_text(text))


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def printed(value: object) -> str:
    """What a Markdown template prints for ``value``: :func:`cell` and :func:`markdown_safe` of its text; a
    macro's lines (``Markup``, from the ``block`` filter) only through :func:`markdown_safe`."""
    if isinstance(value, Markup):
        return markdown_safe(str(value))
    return markdown_safe(cell(str(value)))


def block(lines: str) -> Markup:
    """The ``block`` filter: a macro's output printed as its lines, without the last line break (the
    template's own line break follows)."""
    return Markup(lines.rstrip())


_LABELS = frozenset({"mode", "category", "failure kind", "base vs other"})
"""Columns that name a row when they follow a ``target`` column."""


def column_alignment(header: list[str]) -> str:
    """The default alignment of a table, one ``l``/``r`` per column: the columns that name a row (the first,
    or ``target`` then ``mode``) left, figures right."""
    labels = 1
    while labels < len(header) - 1 and header[labels - 1] == "target" and header[labels] in _LABELS:
        labels += 1
    return "l" * labels + "r" * (len(header) - labels)


_SHARED = (findings, matrix_table, run_facts, runs, splits, tables, time_breakdown, verdict_table)
"""The modules whose text constants (upper-case names: captions, notices) the templates print as globals, as
the other reports do."""


@cache
def environment() -> Environment:
    """The Markdown templates' environment (never the HTML's: it escapes for Markdown, not HTML)."""
    env = Environment(
        loader=PackageLoader("benchmarks.report", "templates"),
        autoescape=False,  # Markdown: every printed value goes through ``printed`` instead
        finalize=printed,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(block=block, alignment=column_alignment)
    env.globals.update(
        (name, value)
        for module in _SHARED
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str)
    )
    return env


def render_table(header: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """A Markdown table's lines (the ``table`` macro of ``templates/_markdown.md.j2``); ``align`` has one
    ``l``/``r`` per column (default: :func:`column_alignment`)."""
    macros = environment().get_template("_markdown.md.j2").module
    return str(macros.table((header, rows), align)).splitlines()  # type: ignore[attr-defined]
