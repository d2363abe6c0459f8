"""DB-grounded scoring: number normalisation, BFCL-style operation matching, fact evaluation, the reply
check of turns that run no operation, turn scores."""

from benchmarks.scoring.facts import FactEvaluationError, FactEvaluator, FactExpr, FactSyntaxError, parse_fact
from benchmarks.scoring.numbers import foreign_amounts, mentions_number
from benchmarks.scoring.operations import OperationMatch, canonical_call, match_operations, normalize_value
from benchmarks.scoring.reply import is_spanish, looks_cut_off, reply_problems, says_cannot
from benchmarks.scoring.turn import TurnScore, TurnScorer, value_in_answer

__all__ = [
    "FactEvaluationError",
    "FactEvaluator",
    "FactExpr",
    "FactSyntaxError",
    "OperationMatch",
    "TurnScore",
    "TurnScorer",
    "canonical_call",
    "foreign_amounts",
    "is_spanish",
    "looks_cut_off",
    "match_operations",
    "mentions_number",
    "normalize_value",
    "parse_fact",
    "reply_problems",
    "says_cannot",
    "value_in_answer",
]
