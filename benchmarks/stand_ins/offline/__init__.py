"""The deterministic offline chat model (a stand-in for an LLM, not a measure of model quality), and
``misbehave``: its reply faults applied to any model's reply (the protocol emulators use it)."""

from benchmarks.stand_ins.offline._faults import misbehave
from benchmarks.stand_ins.offline._model import OfflineSalesModel

__all__ = ["OfflineSalesModel", "misbehave"]
