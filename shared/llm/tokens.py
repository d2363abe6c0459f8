"""A deterministic token-count approximation (``ceil(len(text) / 4)``), so no tokenizer is downloaded.

Approximate, but the benchmark compares both architectures with the same ruler. A chat message adds
:data:`MESSAGE_OVERHEAD_TOKENS` (OpenAI's cookbook: 3–4 tokens per message).
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
