"""Markdown building blocks every Markdown report shares: a safe table cell, text cut at a word, a table."""

from __future__ import annotations

__all__ = ["cell", "clip", "render_table"]


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
    return head.rstrip(" ;,") + "…"


_LABELS = frozenset({"mode", "category", "failure kind", "base vs other"})
"""Columns that name a row when they follow a ``target`` column."""


def render_table(header: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """A Markdown table; ``align`` has one ``l``/``r`` per column (default: the columns that name a row, such
    as ``target`` then ``mode``, left; figures right)."""
    if not align:
        labels = 1
        while labels < len(header) - 1 and header[labels - 1] == "target" and header[labels] in _LABELS:
            labels += 1
        align = "l" * labels + "r" * (len(header) - labels)
    rule = "|" + "|".join("--:" if a == "r" else "---" for a in align) + "|"
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", rule]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines
