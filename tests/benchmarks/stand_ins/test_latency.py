"""Latency profiles: computed model time, reported in response metadata, never slept."""

from __future__ import annotations

import pytest

from benchmarks.stand_ins.latency import LATENCY_PROFILES, LatencyProfile, resolve_latency_profile
from benchmarks.stand_ins.offline import OfflineSalesModel


@pytest.mark.parametrize(
    ("name", "input_tokens", "output_tokens", "cached", "total_ms", "first_token_ms"),
    [
        ("gpu-8b", 3000, 90, 0, 50 + 1000 + 1000, 50 + 1000 + 1000 / 90),
        ("cpu-8b", 150, 10, 0, 100 + 1000 + 1000, 100 + 1000 + 100),
        ("gemini-flash", 10_000, 150, 0, 300 + 0 + 1000, 300 + 0 + 1000 / 150),  # the overhead covers prefill
        # 3,000 prompt tokens at 3,000 tok/s: 1 s of prefill, of which the cached 2,400 tokens are skipped
        ("gpu-8b", 3000, 90, 2400, 50 + 200 + 1000, 50 + 200 + 1000 / 90),
        ("gemini-flash", 10_000, 150, 9000, 300 + 0 + 1000, 300 + 0 + 1000 / 150),  # no prefill rate to skip
        # a cache serves between none and all of the prompt
        *(
            ("gpu-8b", 3000, 0, cached, 50 + prefill, 50 + prefill + 1000 / 90)
            for cached, prefill in [(-5, 1000), (0, 1000), (3000, 0), (9999, 0)]
        ),
    ],
)
def test_presets_are_overhead_uncached_prefill_and_decode(
    name: str, input_tokens: int, output_tokens: int, cached: int, total_ms: float, first_token_ms: float
) -> None:
    profile = LATENCY_PROFILES[name]
    assert profile.latency_ms(input_tokens, output_tokens, cached) == pytest.approx(total_ms)
    assert profile.first_token_ms(input_tokens, cached) == pytest.approx(first_token_ms, abs=1e-3)


def test_cpu_is_much_slower_than_gpu_for_the_same_traffic() -> None:
    assert LATENCY_PROFILES["cpu-8b"].latency_ms(1200, 80) > 10 * LATENCY_PROFILES["gpu-8b"].latency_ms(
        1200, 80
    )


def test_resolve_by_name_object_or_none() -> None:
    custom = LatencyProfile(name="x", prefill_tokens_per_s=10, decode_tokens_per_s=1, overhead_ms=0)
    assert resolve_latency_profile("gpu-8b") is LATENCY_PROFILES["gpu-8b"]
    assert resolve_latency_profile(custom) is custom
    assert resolve_latency_profile(None) is None
    with pytest.raises(ValueError, match="gpu-8b, cpu-8b, gemini-flash"):
        resolve_latency_profile("tpu-1t")


@pytest.mark.parametrize("name", sorted(LATENCY_PROFILES))
@pytest.mark.parametrize(
    ("input_tokens", "output_tokens", "cached"), [(0, 1, 0), (1314, 64, 0), (2500, 169, 0), (1314, 64, 1000)]
)
def test_total_is_first_token_plus_the_other_tokens_decode(
    name: str, input_tokens: int, output_tokens: int, cached: int
) -> None:
    profile = LATENCY_PROFILES[name]
    rest = (output_tokens - 1) * profile.ms_per_output_token
    assert profile.latency_ms(input_tokens, output_tokens, cached) == pytest.approx(
        profile.first_token_ms(input_tokens, cached) + rest, abs=0.01
    )


def test_ms_per_output_token_is_the_inverse_of_the_decode_rate() -> None:
    assert LATENCY_PROFILES["cpu-8b"].ms_per_output_token == 100.0
    assert LATENCY_PROFILES["gpu-8b"].ms_per_output_token == pytest.approx(11.111, abs=1e-3)


def test_the_model_reports_its_simulated_timings_from_its_own_token_counts() -> None:
    reply = OfflineSalesModel(latency_profile="gpu-8b").invoke("hola")
    usage, metadata = reply.usage_metadata, reply.response_metadata
    assert usage is not None
    profile = LATENCY_PROFILES["gpu-8b"]
    assert metadata["simulated_latency_ms"] == profile.latency_ms(
        usage["input_tokens"], usage["output_tokens"]
    )
    assert metadata["simulated_first_token_ms"] == profile.first_token_ms(usage["input_tokens"])
    assert metadata["simulated_ms_per_token"] == pytest.approx(1000 / 90, abs=1e-3)
    assert metadata["simulated_first_token_ms"] < metadata["simulated_latency_ms"]


def test_no_profile_no_simulated_timings() -> None:
    metadata = OfflineSalesModel().invoke("hola").response_metadata
    assert not {"simulated_latency_ms", "simulated_first_token_ms", "simulated_ms_per_token"} & set(metadata)
