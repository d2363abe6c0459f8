"""DB-grounded scoring of benchmark turns: :class:`TurnScorer` judges each answer against the ERP.

The checks live in their own modules: numbers, BFCL-style operation matching, facts, claims, entities, the
clean check (machinery) and the reply check of turns that run no operation.
"""

from benchmarks.scoring.turn import TurnScore, TurnScorer, value_in_answer

__all__ = ["TurnScore", "TurnScorer", "value_in_answer"]
