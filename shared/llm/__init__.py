"""The model layer: the provider factory, token accounting, provider errors.

The factory builds network providers only; a stand-in model is built by whoever runs it and passed in like
any other LangChain chat model.
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
