"""A deterministic token-count approximation, so no tokenizer has to be downloaded.

The rule is the one OpenAI's documentation gives as a rule of thumb ("one token is about four characters of
English text"): ``approx_tokens(text) == ceil(len(text) / 4)``. Real tokenizers differ by language and
vocabulary, so the counts are approximate; that is enough for the benchmark, which compares the two
architectures with the same ruler and is not a bill.

A chat message adds a fixed framing cost (role markers, separators):
:data:`MESSAGE_OVERHEAD_TOKENS`, following OpenAI's cookbook "How to count tokens with tiktoken"
(3–4 tokens per message).
"""

from __future__ import annotations

import json
import math
from typing import Any

CHARS_PER_TOKEN = 4
"""Characters per token in the approximation."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Framing tokens added for every chat message (role and separators)."""


def approx_tokens(text: str) -> int:
    """Approximate token count of ``text``: ``ceil(len(text) / 4)``, and 0 for the empty string."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def approx_json_tokens(value: Any) -> int:
    """Approximate tokens of a JSON-serialisable value as compact UTF-8 JSON text."""
    return approx_tokens(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
