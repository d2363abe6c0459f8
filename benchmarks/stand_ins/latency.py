"""Latency profiles: model time computed from token counts, reported, never slept.

``latency_ms = overhead_ms + (input_tokens - cached_tokens) / prefill_tokens_per_s * 1000 + output_tokens /
decode_tokens_per_s * 1000``; the first-token time is the same sum with one output token. Cached tokens (a
prefix cache) skip prefill, an approximation; a profile without a prefill rate ignores them. With a profile
the offline model's ``response_metadata`` carries ``simulated_latency_ms``, ``simulated_first_token_ms`` and
``simulated_ms_per_token``. The presets are rounded, order-of-magnitude figures from public benchmarks.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LatencyProfile(BaseModel):
    """How fast a model deployment processes a prompt and generates tokens."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Preset name, e.g. 'gpu-8b'.")
    prefill_tokens_per_s: float | None = Field(
        gt=0,
        description="Prompt-processing speed; None when the provider's first-token time already covers it.",
    )
    decode_tokens_per_s: float = Field(gt=0, description="Generation speed in output tokens per second.")
    overhead_ms: float = Field(
        ge=0,
        description="Fixed cost per call (request handling, scheduling): the part of the time to first token "
        "that does not grow with the prompt.",
    )
    schema_as_grammar: bool = Field(
        default=False,
        description="The server turns a structured-output JSON schema (OpenAI-style response_format, Ollama "
        "format) into a decoding grammar and does not show it to the model, so the schema is no prompt "
        "token (llama.cpp server, Ollama). False: it counts as prompt, as hosted APIs bill it.",
    )

    @property
    def ms_per_output_token(self) -> float:
        return 1000.0 / self.decode_tokens_per_s

    def latency_ms(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """Simulated wall time of one call, in milliseconds (``cached_tokens`` skip prefill)."""
        decode = output_tokens / self.decode_tokens_per_s
        return round(self.overhead_ms + (self._prefill_s(input_tokens, cached_tokens) + decode) * 1000.0, 3)

    def first_token_ms(self, input_tokens: int, cached_tokens: int = 0) -> float:
        """Simulated time to the first output token, in milliseconds."""
        prefill = self._prefill_s(input_tokens, cached_tokens)
        return round(self.overhead_ms + (prefill + 1 / self.decode_tokens_per_s) * 1000.0, 3)

    def _prefill_s(self, input_tokens: int, cached_tokens: int) -> float:
        """Prefill seconds of the uncached prompt tokens (``cached_tokens`` clamped to the prompt)."""
        if self.prefill_tokens_per_s is None:
            return 0.0
        processed = input_tokens - min(max(cached_tokens, 0), input_tokens)
        return processed / self.prefill_tokens_per_s


def _local(
    name: str, prefill_tokens_per_s: float, decode_tokens_per_s: float, overhead_ms: float
) -> LatencyProfile:
    """A llama.cpp / Ollama deployment: its server turns a ``response_format`` schema into a GBNF grammar
    (Ollama its ``format``) and adds neither to the prompt, so a plan schema costs no prompt tokens."""
    return LatencyProfile(
        name=name,
        prefill_tokens_per_s=prefill_tokens_per_s,
        decode_tokens_per_s=decode_tokens_per_s,
        overhead_ms=overhead_ms,
        schema_as_grammar=True,
    )


LATENCY_PROFILES: dict[str, LatencyProfile] = {
    profile.name: profile
    for profile in (
        # Llama 3 8B Q4_K_M under llama.cpp / Ollama on one RTX 3080–4090 class card: the llama.cpp benchmark
        # tables (github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference) report a few thousand tok/s prompt
        # processing and ~100–130 tok/s generation; the conservative end, plus ~50 ms per request.
        _local("gpu-8b", prefill_tokens_per_s=3000, decode_tokens_per_s=90, overhead_ms=50),
        # The same model on a desktop CPU (8–16 cores, dual-channel DDR4/DDR5): ~100–200 tok/s prompt
        # processing and ~8–12 tok/s generation (memory-bandwidth bound) in the same tables; plus ~100 ms.
        _local("cpu-8b", prefill_tokens_per_s=150, decode_tokens_per_s=10, overhead_ms=100),
        # Gemini Flash through the public API: Artificial Analysis (artificialanalysis.ai, Gemini 2.x
        # Flash) measures ~0.3 s to first token for short prompts, prompt processing included, and ~150+
        # output tok/s.
        LatencyProfile(
            name="gemini-flash", prefill_tokens_per_s=None, decode_tokens_per_s=150, overhead_ms=300
        ),
    )
}
"""The named presets; the default for every model is no profile at all."""


def resolve_latency_profile(profile: LatencyProfile | str | None) -> LatencyProfile | None:
    """Return the profile itself, the preset of that name, or ``None``; unknown names raise ``ValueError``."""
    if profile is None or isinstance(profile, LatencyProfile):
        return profile
    try:
        return LATENCY_PROFILES[profile]
    except KeyError:
        raise ValueError(
            f"Unknown latency profile {profile!r}; valid profiles: {', '.join(LATENCY_PROFILES)}."
        ) from None
