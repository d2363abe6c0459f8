"""The package's public face: a short, pinned ``__all__``."""

from __future__ import annotations

import shared.llm


def test_public_names_are_pinned() -> None:
    assert sorted(shared.llm.__all__) == [
        "DEFAULT_MAX_TOKENS",
        "DEFAULT_TIMEOUT_S",
        "FaultConfig",
        "FaultMode",
        "LATENCY_PROFILES",
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
    assert all(hasattr(shared.llm, name) for name in shared.llm.__all__)


def test_offline_model_never_imports_the_erp_or_the_modes() -> None:
    import subprocess
    import sys
    from pathlib import Path

    root = Path(shared.llm.__file__).resolve().parents[2]

    code = (
        "import sys, shared.llm.offline; "
        "bad = [m for m in sys.modules "
        "if m.split('.')[0] in ('benchmarks', 'planner_mode', 'toolcalling_mode') "
        "or m.startswith(('shared.erp', 'shared.operations', 'shared.memory'))]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "[]"
