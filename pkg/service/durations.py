"""Go durations: on command lines (``3m``, ``240s``, ``1m30s``, leniently, as KubeVirt's binaries take them),
exactly as Go's ``time.ParseDuration`` reads an API field, and written as Go's ``Duration.String`` writes
one."""

from __future__ import annotations

import math
import re
from typing import Any, Final

import click

NANOSECOND: Final = 1
MICROSECOND: Final = 1000 * NANOSECOND
MILLISECOND: Final = 1000 * MICROSECOND
SECOND: Final = 1000 * MILLISECOND
MINUTE: Final = 60 * SECOND
HOUR: Final = 60 * MINUTE

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go duration (``3m``, ``240s``, ``1m30s``) or plain seconds, in seconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(f"not a duration: {text!r} (examples: 3m, 240s, 1m30s)")
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


class PositiveDuration(click.ParamType[float]):
    """A Go duration above zero, in seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            seconds = parse_duration(str(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)
        if not math.isfinite(seconds) or seconds <= 0:
            self.fail(f"{value!r} must be a duration above 0", param, ctx)
        return seconds


POSITIVE_DURATION = PositiveDuration()


# Go's time.ParseDuration units, in nanoseconds; "µs" is accepted with either micro sign.
_GO_UNITS: dict[bytes, int] = {
    b"ns": NANOSECOND,
    b"us": MICROSECOND,
    "µs".encode(): MICROSECOND,  # U+00B5 MICRO SIGN
    "μs".encode(): MICROSECOND,  # U+03BC GREEK SMALL LETTER MU
    b"ms": MILLISECOND,
    b"s": SECOND,
    b"m": MINUTE,
    b"h": HOUR,
}
_GO_DURATION_LIMIT = 1 << 63
_DIGITS = b"0123456789"


def _go_quote(raw: bytes) -> str:
    """Go's ``time`` quoting in errors: non-ASCII and control bytes as ``\\x..``, ``"`` and ``\\`` escaped."""
    out = ['"']
    for byte in raw:
        if byte >= 0x80 or byte < 0x20:
            out.append(f"\\x{byte:02x}")
        elif byte in b'"\\':
            out.append("\\" + chr(byte))
        else:
            out.append(chr(byte))
    return "".join(out) + '"'


def _leading_int(s: bytes) -> tuple[int, bytes]:
    """Leading digits as an integer; ValueError past Go's uint64 bound (``errLeadingInt``)."""
    i, value = 0, 0
    while i < len(s) and s[i] in _DIGITS:
        value = value * 10 + s[i] - 48
        if value > _GO_DURATION_LIMIT:
            raise ValueError("overflow")
        i += 1
    return value, s[i:]


def _leading_fraction(s: bytes) -> tuple[int, float, bytes]:
    """Leading digits of a fraction as (digits, scale, rest); digits past uint64 precision are dropped."""
    i, value, scale, overflow = 0, 0, 1.0, False
    while i < len(s) and s[i] in _DIGITS:
        if not overflow:
            if value > (_GO_DURATION_LIMIT - 1) // 10:
                overflow = True
            else:
                candidate = value * 10 + s[i] - 48
                if candidate > _GO_DURATION_LIMIT:
                    overflow = True
                else:
                    value, scale = candidate, scale * 10
        i += 1
    return value, scale, s[i:]


def parse_go_duration(text: str) -> int:
    """Go's ``time.ParseDuration`` (as ``metav1.Duration`` decodes): nanoseconds, or ValueError with Go's
    message (``time: invalid duration "x"``, ``time: missing unit ...``, ``time: unknown unit ...``)."""
    # Go's JSON decoding has already replaced lone surrogates with U+FFFD.
    orig = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()
    s, negative = orig, False
    if s[:1] in (b"-", b"+"):
        negative, s = s[:1] == b"-", s[1:]
    if s == b"0":
        return 0
    invalid = ValueError(f"time: invalid duration {_go_quote(orig)}")
    if not s:
        raise invalid
    total = 0
    while s:
        if s[0] not in b"." + _DIGITS:
            raise invalid
        before = len(s)
        try:
            whole, s = _leading_int(s)
        except ValueError:
            raise invalid from None
        has_whole = before != len(s)
        fraction, scale, has_fraction = 0, 1.0, False
        if s[:1] == b".":
            s = s[1:]
            before = len(s)
            fraction, scale, s = _leading_fraction(s)
            has_fraction = before != len(s)
        if not has_whole and not has_fraction:
            raise invalid
        end = 0
        while end < len(s) and s[end] not in b"." + _DIGITS:
            end += 1
        if end == 0:
            raise ValueError(f"time: missing unit in duration {_go_quote(orig)}")
        unit_name, s = s[:end], s[end:]
        unit = _GO_UNITS.get(unit_name)
        if unit is None:
            raise ValueError(f"time: unknown unit {_go_quote(unit_name)} in duration {_go_quote(orig)}")
        if whole > _GO_DURATION_LIMIT // unit:
            raise invalid
        whole *= unit
        if fraction > 0:
            whole += int(float(fraction) * (float(unit) / scale))
            if whole > _GO_DURATION_LIMIT:
                raise invalid
        total += whole
        if total > _GO_DURATION_LIMIT:
            raise invalid
    if negative:
        return -total
    if total > _GO_DURATION_LIMIT - 1:
        raise invalid
    return total


def format_go_duration(nanoseconds: int) -> str:
    """Go's ``Duration.String()``: ``0s``, ``1.5µs``, ``100ms``, ``2m0s``, ``1h0m0.5s``, ``-1s`` (how a
    ``metav1.Duration`` is written)."""
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
    """``value / unit`` with the fraction's trailing zeros dropped (``1.5``, ``2``, ``0.000001``)."""
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
