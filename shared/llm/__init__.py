"""The model layer: the provider factory, token accounting, provider errors.

Stand-in models (the deterministic offline model, fault and latency simulation, protocol emulators) are not
part of it: they live in :mod:`benchmarks.stand_ins`, and :func:`build_chat_model` reaches the offline one
through the ``erp_ai_harness.chat_models`` entry point, so importing this package loads no stand-in.
"""

from shared.llm.factory import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT_S,
    build_chat_model,
    configured_max_tokens,
    configured_timeout,
)
from shared.llm.provider_errors import as_erp_error, stopped_at_limit
from shared.llm.tokens import approx_tokens
from shared.llm.usage import UsageTracker

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT_S",
    "UsageTracker",
    "approx_tokens",
    "as_erp_error",
    "build_chat_model",
    "configured_max_tokens",
    "configured_timeout",
    "stopped_at_limit",
]
