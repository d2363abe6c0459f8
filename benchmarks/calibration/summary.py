"""Counts of the calibration set: human verdicts against the automatic scorer's, per mode, source and model.

``python -m benchmarks.calibration.summary`` re-scores every labeled turn with the current scorer
(:func:`rescored`, against a fresh demo ERP) and prints the tables as Markdown; ``--recorded`` counts the
verdicts recorded in the rows when they were run instead; ``--readme PATH`` also writes the tables into
``PATH`` between the ``CALIBRATION-SUMMARY`` markers (the calibration README's table).
A *false pass* is a turn the scorer passed and the human failed; a *false fail* the reverse.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TURNS = HERE / "turns.jsonl"
START = "<!-- CALIBRATION-SUMMARY:START (written by `python -m benchmarks.calibration.summary`) -->"
END = "<!-- CALIBRATION-SUMMARY:END -->"
VERDICTS = ("pass", "fail")


@dataclass(frozen=True)
class Turn:
    """One labeled turn, reduced to what the counts need."""

    id: str
    source: str
    model: str
    mode: str
    human: str
    scorer: str


@dataclass
class Counts:
    """Human verdicts and scorer agreement over a group of turns."""

    turns: int = 0
    human_pass: int = 0
    scorer_pass: int = 0
    false_pass: int = 0
    false_fail: int = 0

    def add(self, turn: Turn) -> None:
        self.turns += 1
        self.human_pass += turn.human == "pass"
        self.scorer_pass += turn.scorer == "pass"
        self.false_pass += turn.scorer == "pass" and turn.human == "fail"
        self.false_fail += turn.scorer == "fail" and turn.human == "pass"

    @property
    def agreement(self) -> float:
        return 1 - (self.false_pass + self.false_fail) / self.turns if self.turns else 0.0


def load(path: Path = TURNS) -> list[Turn]:
    """The labeled turns in ``path``; an unknown verdict or a repeated id is an error."""
    turns: list[Turn] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        item: dict[str, Any] = json.loads(line)
        turn = Turn(**{name: str(item[name]) for name in Turn.__dataclass_fields__})
        if turn.human not in VERDICTS or turn.scorer not in VERDICTS:
            raise ValueError(f"{path}:{number}: verdicts must be pass or fail: {turn.id}")
        if turn.id in seen:
            raise ValueError(f"{path}:{number}: repeated id {turn.id}")
        if not str(item.get("reason", "")).strip():
            raise ValueError(f"{path}:{number}: {turn.id} has no reason")
        seen.add(turn.id)
        turns.append(turn)
    return turns


def rescored(turns: Sequence[Turn], path: Path = TURNS) -> list[Turn]:
    """``turns`` (read from ``path``) with the current scorer's verdicts instead of the recorded ones."""
    from benchmarks.rescore import rescore  # imported here: the counts of recorded verdicts need no ERP
    from benchmarks.results import RunMeta, RunResults, TurnRow
    from benchmarks.scenario import load_scenarios
    from shared.erp.database import open_demo_erp
    from shared.operations.sales import sales_registry

    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [TurnRow.model_validate(json.loads(line)["row"]) for line in lines]
    erp = open_demo_erp("sqlite://")
    try:
        again, _ = rescore(RunResults(meta=RunMeta(), rows=rows), load_scenarios(), sales_registry(), erp)
    finally:
        erp.engine.dispose()
    verdicts = ["pass" if row.score.passed else "fail" for row in again.rows]
    return [replace(turn, scorer=verdict) for turn, verdict in zip(turns, verdicts, strict=True)]


def group(turns: Iterable[Turn], key: Callable[[Turn], str]) -> dict[str, Counts]:
    """Counts per value of ``key``, in order of first appearance, plus an ``all`` row."""
    groups: dict[str, Counts] = {}
    total = Counts()
    for turn in turns:
        groups.setdefault(key(turn), Counts()).add(turn)
        total.add(turn)
    groups["all"] = total
    return groups


def table(title: str, groups: dict[str, Counts]) -> list[str]:
    """One Markdown table of ``groups``."""
    lines = [
        f"| {title} | turns | human pass | human fail | scorer pass | false pass | false fail | agreement |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name, c in groups.items():
        label = f"**{name}**" if name == "all" else f"`{name}`"
        lines.append(
            f"| {label} | {c.turns} | {c.human_pass} | {c.turns - c.human_pass} | {c.scorer_pass} "
            f"| {c.false_pass} | {c.false_fail} | {c.agreement:.0%} |"
        )
    return lines


def render(turns: Sequence[Turn]) -> str:
    """The three tables (per mode, per source, per model) as Markdown."""
    parts: list[str] = []
    for title in ("mode", "source", "model"):
        parts += [*table(title, group(turns, attrgetter(title))), ""]
    return "\n".join(parts).rstrip() + "\n"


def write_readme(path: Path, text: str) -> None:
    """Replace what lies between the markers in ``path`` by ``text``."""
    content = path.read_text(encoding="utf-8")
    head, sep, rest = content.partition(START)
    if not sep or END not in rest:
        raise ValueError(f"{path} has no {START} … {END} block")
    tail = rest.partition(END)[2]
    path.write_text(f"{head}{START}\n\n{text}\n{END}{tail}", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=Path, default=TURNS, help="the labeled turns (JSON lines)")
    parser.add_argument("--readme", type=Path, help="also write the tables into this file's marked block")
    parser.add_argument(
        "--recorded",
        action="store_true",
        help="count the verdicts recorded in the rows, not the current scorer's",
    )
    args = parser.parse_args(argv)
    turns = load(args.turns)
    text = render(turns if args.recorded else rescored(turns, args.turns))
    print(text, end="")
    if args.readme:
        write_readme(args.readme, text)


if __name__ == "__main__":
    main()
