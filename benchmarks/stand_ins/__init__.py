"""Stand-ins for a model: the offline model, fault and latency simulation, protocol emulators; and
:func:`build_model`, which builds the offline stand-in or any network provider by name."""

from benchmarks.stand_ins.models import DEFAULT_MODELS, PROVIDERS, build_model

__all__ = ["DEFAULT_MODELS", "PROVIDERS", "build_model"]
