"""Kubernetes ``resource.Quantity``: exact parsing, Go's rounding and its canonical string form.

A quantity is held exactly as an integer number of nano-units (Kubernetes rounds anything finer up to
1n, away from zero), plus the format its suffix implies (binary ``Ki``…``Ei``, decimal ``n``…``E``, or a
decimal exponent ``e3``). Like Go, a quantity parsed from a string that is already in canonical form
keeps that exact string (so ``+1Gi`` stays ``+1Gi``); everything else prints canonically (``1.5Gi`` →
``1536Mi``, ``0.5`` → ``500m``, ``1000Mi`` stays ``1000Mi``).
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import total_ordering
from typing import Any, Final, Literal

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

__all__ = ["BINARY_SI", "DECIMAL_EXPONENT", "DECIMAL_SI", "QUANTITY_PATTERN", "Quantity", "QuantityError"]

Format = Literal["BinarySI", "DecimalSI", "DecimalExponent"]
BINARY_SI: Final = "BinarySI"
DECIMAL_SI: Final = "DecimalSI"
DECIMAL_EXPONENT: Final = "DecimalExponent"

_NANO: Final = 10**9
_MAX_INT64: Final = 2**63 - 1
# Go's fast path works with int64 and at most 18 significant decimal digits.
_MAX_INT64_FACTORS: Final = 18

_DECIMAL_SUFFIXES: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT: Final = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_MAX_BINARY_FACTORS: Final = 6
_BINARY_BY_EXPONENT: Final = {0: "", **{exponent: suffix for suffix, exponent in _BINARY_SUFFIXES.items()}}
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
# Text the scanner below would accept with a known suffix: sign, digits (leading zeros apart), fraction.
_WELL_FORMED: Final = re.compile(
    r"([+-]?)0*([0-9]*)(?:\.([0-9]*))?([numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]+|)\Z"
)
_DIGITS: Final = frozenset("0123456789")

# The pattern Kubernetes' OpenAPI schemas give every quantity (stricter than the parser below).
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_REGEX_TEXT: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity; messages are Kubernetes' own."""


_ERR_FORMAT: Final = f"quantities must match the regular expression '{_REGEX_TEXT}'"
_ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
_ERR_SUFFIX: Final = "unable to parse quantity's suffix"


def _scan(text: str) -> tuple[bool, str, str, str]:
    """Splits ``text`` into (positive, numerator digits, denominator digits, suffix), as Go's scanner."""
    positive = True
    pos = 0
    end = len(text)
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(_ERR_FORMAT)
    return positive, num, denom, text[suffix_start:]


def _interpret_suffix(suffix: str) -> tuple[int, int, Format]:
    """(base, exponent, format) of a suffix."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        body = suffix[1:]
        digits = body[1:] if body[0] in "+-" else body
        if digits and all(c in _DIGITS for c in digits):
            return 10, int(body), DECIMAL_EXPONENT
    raise QuantityError(_ERR_SUFFIX)


def _keeps_text(positive: bool, num: str, denom: str, base: int, exponent: int) -> bool:
    """Whether Go's fast path keeps the original text as the quantity's string form."""
    if base == 10:
        if _MAX_INT64_FACTORS - (len(num) + len(denom)) < 0:
            return False
        scale = exponent - len(denom)
        if scale < -9:
            return False
        shifted = num + denom
        value = int(shifted)
        if value > _MAX_INT64:
            return False
        return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    if denom:
        return False
    precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    if precision < 0:
        return False
    value = int(num)
    return value <= _MAX_INT64 and (value << exponent) <= _MAX_INT64 and value & 0x07 != 0


def _ceil_div_pow10(value: int, power: int) -> int:
    """``value * 10**power`` for a non-negative value, rounded up to a whole number."""
    scale: int = 10 ** abs(power)
    return value * scale if power >= 0 else -(-value // scale)


def _remove_factors(value: int, base: int, limit: int | None = None) -> tuple[int, int]:
    """``value`` without up to ``limit`` (default: all) factors of ``base``, and how many were taken."""
    times = 0
    while value != 0 and value % base == 0 and times != limit:
        value //= base
        times += 1
    return value, times


@total_ordering
class Quantity:
    """An immutable Kubernetes quantity. ``Quantity("1.5Gi")``, ``Quantity.from_int(3, "DecimalSI")``."""

    __slots__ = ("_format", "_nanos", "_text")

    _nanos: int
    _format: Format
    _text: str | None

    def __init__(self, text: str) -> None:
        self._nanos, self._format, self._text = self._parse(text)

    @classmethod
    def _make(cls, nanos: int, fmt: Format) -> Quantity:
        quantity = cls.__new__(cls)
        quantity._nanos = nanos
        quantity._format = fmt
        quantity._text = None
        return quantity

    @classmethod
    def from_int(cls, value: int, fmt: Format = DECIMAL_SI) -> Quantity:
        """``value`` units (Go's ``NewQuantity``)."""
        return cls._make(value * _NANO, fmt)

    @classmethod
    def from_milli(cls, value: int, fmt: Format = DECIMAL_SI) -> Quantity:
        """``value`` thousandths of a unit (Go's ``NewMilliQuantity``)."""
        return cls._make(value * 1_000_000, fmt)

    @classmethod
    def from_scaled(cls, value: int, scale: int, fmt: Format = DECIMAL_SI) -> Quantity:
        """``value * 10**scale`` (Go's ``NewScaledQuantity``), rounded up to 1n."""
        exact = Fraction(value) * Fraction(10) ** scale
        return cls._make(_round_to_nanos(exact), fmt)

    @staticmethod
    def _parse(text: str) -> tuple[int, Format, str | None]:
        if not isinstance(text, str):
            raise QuantityError(_ERR_FORMAT)
        if text == "":
            raise QuantityError(_ERR_FORMAT)
        if text == "0":
            return 0, DECIMAL_SI, "0"
        match = _WELL_FORMED.match(text)
        if match is not None:  # the common case, without the character-by-character scan
            sign, num, denom, suffix = match.groups()
            positive, num, denom = sign != "-", num or "0", denom or ""
        else:
            positive, num, denom, suffix = _scan(text)
        base, exponent, fmt = _interpret_suffix(suffix)
        digits = int(num + denom)
        if base == 10:
            nanos = _ceil_div_pow10(digits, exponent - len(denom) + 9)
        else:
            nanos = -((-(digits << exponent) * _NANO) // 10 ** len(denom))
        if fmt == BINARY_SI and nanos > _MAX_INT64 * _NANO:
            nanos = _MAX_INT64 * _NANO
        if fmt == BINARY_SI and 0 < nanos < _NANO:
            fmt = DECIMAL_SI
        kept = text if _keeps_text(positive, num, denom, base, exponent) else None
        return (nanos if positive else -nanos), fmt, kept

    # -- values --------------------------------------------------------------------------------------
    @property
    def format(self) -> Format:
        return self._format

    def as_fraction(self) -> Fraction:
        return Fraction(self._nanos, _NANO)

    def scaled_value(self, scale: int) -> int:
        """The value in units of ``10^scale``, rounded up away from zero (Go's ``ScaledValue``)."""
        exact = Fraction(self._nanos, _NANO) / Fraction(10) ** scale
        magnitude = -((-abs(exact.numerator)) // exact.denominator)
        return magnitude if exact >= 0 else -magnitude

    def value(self) -> int:
        """Go's ``Value()``: whole units, rounded up away from zero."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """Go's ``MilliValue()``."""
        return self.scaled_value(-3)

    def is_zero(self) -> bool:
        return self._nanos == 0

    def sign(self) -> int:
        return (self._nanos > 0) - (self._nanos < 0)

    # -- arithmetic (results lose the kept text and print canonically, as in Go) ---------------------
    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = self._format if self._nanos != 0 or other._nanos == 0 else other._format
        return Quantity._make(self._nanos + other._nanos, fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = self._format if self._nanos != 0 or other._nanos == 0 else other._format
        return Quantity._make(self._nanos - other._nanos, fmt)

    def __mul__(self, factor: int) -> Quantity:
        if not isinstance(factor, int) or isinstance(factor, bool):
            return NotImplemented
        return Quantity._make(self._nanos * factor, self._format)

    __rmul__ = __mul__

    def __neg__(self) -> Quantity:
        return Quantity._make(-self._nanos, self._format)

    # -- comparison (by value, like Go's Cmp/Equal; the format does not matter) ----------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self._nanos == other._nanos
        return NotImplemented

    def __lt__(self, other: Quantity) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._nanos < other._nanos

    def __hash__(self) -> int:
        return hash(self._nanos)

    def cmp(self, other: Quantity) -> int:
        return (self._nanos > other._nanos) - (self._nanos < other._nanos)

    # -- text ----------------------------------------------------------------------------------------
    def __str__(self) -> str:
        if self._text is None:
            self._text = self.canonical()
        return self._text

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def canonical(self) -> str:
        """Go's ``CanonicalizeBytes``: the shortest exact form in the quantity's format."""
        if self._nanos == 0:
            return "0"
        fmt = self._format
        if fmt == BINARY_SI:
            if -1024 * _NANO < self._nanos < 1024 * _NANO or self._nanos % _NANO != 0:
                fmt = DECIMAL_SI
            else:
                units = self._nanos // _NANO
                sign = "-" if units < 0 else ""
                # Ei is the largest suffix: beyond 1024^6 the amount grows instead
                amount, times = _remove_factors(abs(units), 1024, _MAX_BINARY_FACTORS)
                return f"{sign}{amount}{_BINARY_BY_EXPONENT[times * 10]}"
        sign = "-" if self._nanos < 0 else ""
        amount, times = _remove_factors(abs(self._nanos), 10)
        exponent = times - 9
        shift = exponent % 3
        amount *= 10**shift
        exponent -= shift
        if fmt == DECIMAL_EXPONENT:
            suffix = f"e{exponent}" if exponent != 0 else ""
        else:
            suffix = _DECIMAL_BY_EXPONENT.get(exponent, f"e{exponent}")
        return f"{sign}{amount}{suffix}"

    # -- pydantic ------------------------------------------------------------------------------------
    @classmethod
    def coerce(cls, value: Any) -> Quantity:
        """Accepts a quantity, its string form, a JSON number or null (as Go's UnmarshalJSON does)."""
        if isinstance(value, Quantity):
            return value
        if value is None:  # JSON null decodes to a zero quantity in Go
            return cls._make(0, DECIMAL_SI)
        if isinstance(value, str):
            return cls(value.strip())
        if isinstance(value, bool):
            raise QuantityError(_ERR_FORMAT)
        if isinstance(value, int):
            return cls(str(value))
        if isinstance(value, float):
            return cls(repr(value).replace("e+", "e"))
        raise QuantityError(_ERR_FORMAT)

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.coerce, serialization=core_schema.to_string_ser_schema()
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }


def _round_to_nanos(value: Fraction) -> int:
    """Whole nano-units, rounding any finer remainder up away from zero (Go rounds with RoundUp)."""
    scaled = abs(value) * _NANO
    nanos = -((-scaled.numerator) // scaled.denominator)
    return nanos if value >= 0 else -nanos
