"""Latency profiles: model time computed from token counts, reported, never slept.

A profile turns ``(input_tokens, output_tokens)`` into milliseconds::

    overhead_ms + input_tokens / prefill_tokens_per_s * 1000 + output_tokens / decode_tokens_per_s * 1000

The offline model answers in microseconds; with a profile its ``AIMessage.response_metadata`` carries
``simulated_latency_ms`` so the benchmark can show what the same token traffic would cost on real hardware.
The presets are rounded, order-of-magnitude figures from public benchmarks (sources next to each preset).
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
        ge=0, description="Fixed cost per call: request handling, time to first token."
    )

    def latency_ms(self, input_tokens: int, output_tokens: int) -> float:
        """Simulated wall time of one call with these token counts, in milliseconds."""
        prefill = 0.0 if self.prefill_tokens_per_s is None else input_tokens / self.prefill_tokens_per_s
        decode = output_tokens / self.decode_tokens_per_s
        return round(self.overhead_ms + (prefill + decode) * 1000.0, 3)


LATENCY_PROFILES: dict[str, LatencyProfile] = {
    # Llama 3 8B Q4_K_M under llama.cpp / Ollama on one RTX 3080–4090 class card. Public llama.cpp benchmark
    # tables (github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference, "Llama 3 8B Q4_K_M" rows) report a few
    # thousand tok/s prompt processing and ~100–130 tok/s generation on these cards; we take the conservative
    # end, ~3,000 / ~90 tok/s, plus ~50 ms per request for HTTP and scheduling.
    "gpu-8b": LatencyProfile(
        name="gpu-8b", prefill_tokens_per_s=3000, decode_tokens_per_s=90, overhead_ms=50
    ),
    # The same 8B Q4 model on a desktop CPU only (8–16 cores, dual-channel DDR4/DDR5): the same llama.cpp
    # benchmark tables and llama.cpp CPU discussions show ~100–200 tok/s prompt processing and ~8–12 tok/s
    # generation (memory-bandwidth bound). Preset: ~150 / ~10, plus ~100 ms per request.
    "cpu-8b": LatencyProfile(
        name="cpu-8b", prefill_tokens_per_s=150, decode_tokens_per_s=10, overhead_ms=100
    ),
    # Gemini Flash through the public API: Artificial Analysis (artificialanalysis.ai, Gemini 2.x Flash model
    # pages) measures about 0.3 s to first token for short prompts and ~150+ output tok/s. The first-token
    # time already includes prompt processing for prompts of our size, so no separate prefill rate.
    "gemini-flash": LatencyProfile(
        name="gemini-flash", prefill_tokens_per_s=None, decode_tokens_per_s=150, overhead_ms=300
    ),
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
