"""Results as the ERP shows them to a model, read back: grouped figures (``"850.000.000"``) are numbers."""

from __future__ import annotations

import re
from typing import Any

_GROUPED = re.compile(r"-?\d{1,3}(?:\.\d{3})+")


def read_figures(value: Any) -> Any:
    """A result as the ERP shows it to a model (``"850.000.000"``) read back as numbers (``850000000``)."""
    if isinstance(value, dict):
        return {key: read_figures(item) for key, item in value.items()}
    if isinstance(value, list):
        return [read_figures(item) for item in value]
    if isinstance(value, str) and _GROUPED.fullmatch(value):
        return int(value.replace(".", ""))
    return value
