"""A model of a prompt (prefix) cache: how many prompt tokens the offline model reports as cached.

This is a model of a cache, not a measurement. Servers keep the keys and values they computed for recent
prompts (llama.cpp's slot and prompt caches, OpenAI's and Gemini's automatic prompt caching) and reuse them
when a new prompt starts with the same tokens; they report that part as cached input tokens (OpenAI-compatible
``prompt_tokens_details.cached_tokens``, Gemini ``cachedContentTokenCount``, LangChain
``usage_metadata["input_token_details"]["cache_read"]``). The offline model has no tokenizer, so it applies
one documented rule to the token counts of :mod:`shared.llm.tokens`:

**The rule: whole blocks.** A prompt is a sequence of blocks, in the order a chat template lays them out:
the tool definitions (if any), the response format's JSON schema (if any), then each message (its role, its
text and the tool calls it carries; not tool-call ids, which many chat templates do not render). Each block
costs the tokens :mod:`shared.llm.tokens` counts for it, so the blocks add up to the call's ``input_tokens``.
A prompt's cached tokens are the tokens of its longest run of leading blocks equal to the leading blocks of
one prompt in the cache, at most ``input_tokens - 1``: a server processes at least the last prompt token to
produce the first output token (llama.cpp re-evaluates it even when the whole prompt matches). The cache
keeps the last :attr:`PrefixCache.size` prompts, least recently used out; expiry after minutes of inactivity
(OpenAI, Gemini) is not modelled: a benchmark run is shorter.

Real caches match tokens, not messages (llama.cpp any common token prefix; OpenAI in steps of 128 tokens
from 1,024), so a changed message that begins like the cached one would add a few tokens to a real hit; and
OpenAI's 1,024-token minimum would give short prompts no hit at all. Whole blocks keep the rule simple and
independent of a tokenizer; the figures describe what a prefix cache can reuse given how the prompts are
ordered, which is what the comparison of the two architectures needs.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
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
    """One block of a prompt: what must be equal for a cache hit, and what it costs in tokens."""

    key: str
    """The block's identity: its kind and content (two blocks match when their keys are equal)."""
    tokens: int
    """Its tokens, as :mod:`shared.llm.tokens` counts them."""


def block_text(message: BaseMessage) -> str:
    """What a message contributes to the prompt: its text, and for an AI message its tool calls' names and
    arguments (the text the offline model counts as the message's input tokens)."""
    text = message_text(message)
    if isinstance(message, AIMessage) and message.tool_calls:
        text += json.dumps([{"name": c["name"], "args": c["args"]} for c in message.tool_calls], default=str)
    return text


def prompt_blocks(
    messages: Sequence[BaseMessage], options: dict[str, Any], *, schema_in_prompt: bool = True
) -> list[PromptBlock]:
    """The blocks of one call's prompt: tools and response format (from the call's ``options``), then the
    messages. ``sum(block.tokens)`` is the call's input tokens: per message its text plus
    :data:`~shared.llm.tokens.MESSAGE_OVERHEAD_TOKENS`, the tools and a dict ``response_format``/``format``
    as compact JSON. ``schema_in_prompt=False``: the server uses the response format as a decoding grammar
    only (llama.cpp, Ollama; :attr:`~benchmarks.stand_ins.latency.LatencyProfile.schema_as_grammar`), so it
    is no
    block of the prompt."""
    blocks: list[PromptBlock] = []
    if options.get("tools"):
        blocks.append(_json_block("tools", options["tools"]))
    for name in ("response_format", "format") if schema_in_prompt else ():
        if isinstance(options.get(name), dict):
            blocks.append(_json_block(name, options[name]))
    for message in messages:
        text = block_text(message)
        blocks.append(PromptBlock(f"{message.type}\n{text}", approx_tokens(text) + MESSAGE_OVERHEAD_TOKENS))
    return blocks


def _json_block(kind: str, value: Any) -> PromptBlock:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return PromptBlock(f"{kind}\n{text}", approx_json_tokens(value))


class PrefixCache:
    """The last ``size`` prompts, by their blocks; thread-safe. ``size == 0``: nothing is ever cached."""

    def __init__(self, size: int = DEFAULT_PROMPT_CACHE_SIZE) -> None:
        if size < 0:
            raise ValueError(f"A prompt cache keeps 0 or more prompts, not {size}.")
        self.size = size
        self._lock = threading.Lock()
        self._prompts: deque[tuple[bytes, ...]] = deque()
        """Each prompt as the running digests of its blocks: equal digests at position i mean equal blocks
        up to i."""

    def read(self, blocks: Sequence[PromptBlock]) -> int:
        """The tokens of ``blocks`` a prefix cache would serve (see the module's rule), then remember them."""
        digests = _running_digests(blocks)
        if self.size == 0 or not digests:
            return 0
        with self._lock:
            matched = max((_common(digests, cached) for cached in self._prompts), default=0)
            if digests in self._prompts:
                self._prompts.remove(digests)
            self._prompts.append(digests)
            while len(self._prompts) > self.size:
                self._prompts.popleft()
        total = sum(block.tokens for block in blocks)
        return max(0, min(sum(block.tokens for block in blocks[:matched]), total - 1))

    def clear(self) -> None:
        """Forget every prompt."""
        with self._lock:
            self._prompts.clear()


def _running_digests(blocks: Sequence[PromptBlock]) -> tuple[bytes, ...]:
    running = hashlib.blake2b(digest_size=16)
    digests: list[bytes] = []
    for block in blocks:
        key = block.key.encode("utf-8")
        running.update(len(key).to_bytes(8, "big"))  # the length first: block boundaries are part of the key
        running.update(key)
        digests.append(running.digest())
    return tuple(digests)


def _common(new: tuple[bytes, ...], cached: tuple[bytes, ...]) -> int:
    """How many leading blocks two prompts share (running digests: the last equal position decides)."""
    low, high = 0, min(len(new), len(cached))
    while low < high:  # equal at i implies equal at every j < i: binary search for the last equal position
        middle = (low + high + 1) // 2
        if new[middle - 1] == cached[middle - 1]:
            low = middle
        else:
            high = middle - 1
    return low
