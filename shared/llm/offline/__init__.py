"""The deterministic offline chat model (a stand-in for an LLM, not a measure of model quality)."""

from shared.llm.offline._model import OfflineSalesModel

__all__ = ["OfflineSalesModel"]
