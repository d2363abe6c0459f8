"""How the charts write numbers: thousands grouped with thin spaces, times in their own unit, money."""

from __future__ import annotations


def grouped(value: float, decimals: int = 0, *, group: bool | None = None) -> str:
    """``value`` with ``decimals``; thin-space thousands separators from 10 000 up (or when ``group``)."""
    if group is None:
        group = abs(value) >= 10_000
    return f"{value:{',' if group else ''}.{decimals}f}".replace(",", "\u202f")


def ms_tick(value: float) -> str:
    """``"0.5 ms"``, ``"250 ms"``, ``"1.5 s"``, ``"150 s"``: a time, three significant digits at most."""
    if value >= 1_000_000:
        return f"{value / 1000:,.0f} s"
    if value >= 999.5:  # what rounds to 1000 ms is written as 1 s
        return f"{value / 1000:.3g} s"
    return f"{value:.3g} ms"


def tick_label(value: float, step: float, top: float) -> str:
    """A tick value with as many decimals as the step needs, grouped when the axis reaches 10 000."""
    fraction = f"{step:.10f}".rstrip("0").partition(".")[2]
    return grouped(value, min(len(fraction), 4), group=top >= 10_000)


def usd(value: float) -> str:
    """``"$0.0042"``, ``"$0.42"``, ``"$12.50"``, ``"$1,250"``: dollars, enough digits to tell values apart."""
    if value >= 100:
        return f"${value:,.0f}"
    if value >= 0.1 or value == 0:
        return f"${value:.2f}"
    return f"${value:.2g}"


def percent(value: float) -> str:
    """A share (0..1) as a whole percentage."""
    return f"{value:.0%}"
