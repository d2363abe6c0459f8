"""The deterministic offline chat model (a stand-in for an LLM, not a measure of model quality).

``misbehave`` applies the offline model's reply faults to any model's reply (the protocol emulators use it).
"""

from benchmarks.stand_ins.faults import REPLY_FAULTS
from benchmarks.stand_ins.offline._faults import Misbehaviour, misbehave
from benchmarks.stand_ins.offline._model import OfflineSalesModel

__all__ = ["REPLY_FAULTS", "Misbehaviour", "OfflineSalesModel", "misbehave"]
