"""The scorer check every report gives: the current scorer against the human-labeled sets, re-scored when the
report is rendered (benchmarks/report/calibration.py)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.calibration.summary import TURNS
from benchmarks.report.calibration import (
    CALIBRATION_SETS,
    ScorerAgreement,
    agreement_line,
    measure_agreement,
    scorer_agreement,
)


def _set(path: Path, labels: list[dict[str, object]], *, flip: bool) -> Path:
    """``labels`` as a calibration set, every human verdict turned round when ``flip``."""
    lines = []
    for label in labels:
        human = label["human"]
        lines.append(
            json.dumps({**label, "human": ("fail" if human == "pass" else "pass") if flip else human})
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_agreement_is_recomputed_from_the_human_verdicts(tmp_path: Path) -> None:
    labels = [json.loads(line) for line in TURNS.read_text(encoding="utf-8").splitlines()[:6]]
    as_labeled = _set(tmp_path / "a.jsonl", labels, flip=False)
    turned = _set(tmp_path / "b.jsonl", labels, flip=True)

    a, b = measure_agreement([("set a", as_labeled), ("set b", turned), ("absent", tmp_path / "none.jsonl")])

    assert (a.name, a.turns, b.turns) == ("set a", 6, 6), "a missing set is left out"
    assert b.agreed == a.turns - a.agreed, "turning every human verdict round turns every agreement round"
    assert b.false_passes + b.false_fails == a.agreed


def test_every_packaged_set_is_measured_and_said_in_one_line() -> None:
    found = scorer_agreement()
    assert not isinstance(found, str), found
    assert [a.name for a in found] == [name for name, path in CALIBRATION_SETS if path.exists()]
    line = agreement_line()
    assert line.startswith("Scorer check: re-scored when this report was rendered, the current scorer agrees")
    assert f"on {found[0].agreed} of the {found[0].turns} turns of the set it was tuned on" in line


def test_the_line_says_so_when_the_figure_cannot_be_computed() -> None:
    given = [ScorerAgreement("the held-out set", turns=10, false_passes=1, false_fails=2)]
    assert agreement_line(given).endswith(
        "on 7 of the 10 turns of the held-out set (70.0%: 1 false passes, 2 false fails)."
    )
    assert agreement_line("ValueError: no such scenario").endswith(
        "could not be computed: ValueError: no such scenario."
    )
    assert "could not be computed: no calibration set found." in agreement_line([])
