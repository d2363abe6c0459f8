"""A model of a prompt (prefix) cache: how many prompt tokens the offline model reports as cached.

A model, not a measurement. A prompt is a sequence of blocks in chat-template order (the tools, the response
format's schema, then each message with its role, text and tool calls but not their ids), each costing what
:mod:`shared.llm.tokens` counts, so the blocks add up to ``input_tokens``. The cached tokens are those of the
longest run of leading blocks shared with one of the last :attr:`PrefixCache.size` prompts (least recently
used out), at most ``input_tokens - 1`` (a server always processes the last prompt token). Real caches match
tokens, so figures describe what a prefix cache can reuse given how prompts are ordered, which is what
comparing the two architectures needs.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from benchmarks.stand_ins.offline._prompt import message_text
from shared.llm.tokens import MESSAGE_OVERHEAD_TOKENS, approx_json_tokens, approx_tokens

DEFAULT_PROMPT_CACHE_SIZE = 64
"""Prompts the offline model's cache keeps by default: enough for the turns of several conversations."""


@dataclass(frozen=True)
class PromptBlock:
    """One block of a prompt: its identity (kind and content; equal keys match) and its tokens."""

    key: str
    tokens: int


def prompt_blocks(
    messages: Sequence[BaseMessage], options: dict[str, Any], *, schema_in_prompt: bool = True
) -> list[PromptBlock]:
    """The blocks of one call's prompt: the call's tools and dict ``response_format``/``format`` (not the
    schema when ``schema_in_prompt`` is false: a server that uses it as a grammar only), then each message."""
    blocks: list[PromptBlock] = []
    for name in ["tools", *(("response_format", "format") if schema_in_prompt else ())]:
        value = options.get(name)
        if value if name == "tools" else isinstance(value, dict):
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
            blocks.append(PromptBlock(f"{name}\n{text}", approx_json_tokens(value)))
    for message in messages:
        text = message_text(message)
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = [{"name": c["name"], "args": c["args"]} for c in message.tool_calls]
            text += json.dumps(calls, default=str)
        blocks.append(PromptBlock(f"{message.type}\n{text}", approx_tokens(text) + MESSAGE_OVERHEAD_TOKENS))
    return blocks


class PrefixCache:
    """The last ``size`` prompts, by their blocks; thread-safe. ``size == 0``: nothing is ever cached."""

    def __init__(self, size: int = DEFAULT_PROMPT_CACHE_SIZE) -> None:
        if size < 0:
            raise ValueError(f"A prompt cache keeps 0 or more prompts, not {size}.")
        self.size = size
        self._lock = threading.Lock()
        self._prompts: OrderedDict[tuple[str, ...], None] = OrderedDict()

    def read(self, blocks: Sequence[PromptBlock]) -> int:
        """The tokens of ``blocks`` a prefix cache would serve (see the module's rule), then remember them."""
        keys = tuple(block.key for block in blocks)
        if self.size == 0 or not keys:
            return 0
        with self._lock:
            matched = max((_common(keys, cached) for cached in self._prompts), default=0)
            self._prompts.pop(keys, None)
            self._prompts[keys] = None
            while len(self._prompts) > self.size:
                self._prompts.popitem(last=False)
        total = sum(block.tokens for block in blocks)
        return max(0, min(sum(block.tokens for block in blocks[:matched]), total - 1))


def _common(new: tuple[str, ...], cached: tuple[str, ...]) -> int:
    """How many leading blocks two prompts share."""
    return next(
        (i for i, (a, b) in enumerate(zip(new, cached, strict=False)) if a != b), min(len(new), len(cached))
    )
