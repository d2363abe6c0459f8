"""The model layer: the provider factory, the offline model, token and latency accounting, fault injection."""

from shared.llm.factory import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT_S,
    build_chat_model,
    configured_max_tokens,
    configured_timeout,
)
from shared.llm.faults import FaultConfig, FaultMode
from shared.llm.latency import LATENCY_PROFILES, LatencyProfile
from shared.llm.offline import OfflineSalesModel
from shared.llm.provider_errors import as_erp_error, stopped_at_limit
from shared.llm.tokens import approx_tokens
from shared.llm.usage import UsageTracker

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT_S",
    "LATENCY_PROFILES",
    "FaultConfig",
    "FaultMode",
    "LatencyProfile",
    "OfflineSalesModel",
    "UsageTracker",
    "approx_tokens",
    "as_erp_error",
    "build_chat_model",
    "configured_max_tokens",
    "configured_timeout",
    "stopped_at_limit",
]
