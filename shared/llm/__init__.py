"""The model layer: the provider factory, the offline model, token and latency accounting, fault injection."""

from shared.llm.factory import build_chat_model
from shared.llm.faults import FaultConfig, FaultMode
from shared.llm.latency import LATENCY_PROFILES, LatencyProfile
from shared.llm.offline import OfflineSalesModel
from shared.llm.tokens import approx_tokens
from shared.llm.usage import UsageTracker

__all__ = [
    "LATENCY_PROFILES",
    "FaultConfig",
    "FaultMode",
    "LatencyProfile",
    "OfflineSalesModel",
    "UsageTracker",
    "approx_tokens",
    "build_chat_model",
]
