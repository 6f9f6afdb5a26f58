"""Go's ``Duration.String`` for integer nanoseconds: the export's ``spec.ttlDuration`` is written as Go
writes a ``metav1.Duration`` (``2m0s``, ``1h30m0s``, ``1.5s``). Parsing is ``kubevirt.service.durations``'.
"""

from __future__ import annotations

NANOSECOND = 1
MICROSECOND = 1000 * NANOSECOND
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND


def format_go_duration(nanoseconds: int) -> str:
    """``Duration.String()``: ``0s``, ``1.5µs``, ``100ms``, ``2m0s``, ``1h0m0.5s``."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    value = abs(nanoseconds)
    if value < MICROSECOND:
        return f"{sign}{value}ns"
    if value < MILLISECOND:
        return f"{sign}{_decimal(value, MICROSECOND)}\u00b5s"
    if value < SECOND:
        return f"{sign}{_decimal(value, MILLISECOND)}ms"
    minutes, remainder = divmod(value, MINUTE)
    text = f"{_decimal(remainder, SECOND)}s"
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return f"{sign}{text}"


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
