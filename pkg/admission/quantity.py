"""Quantity reads for admission rules, on top of the API's ``kubevirt_api.resource.Quantity``.

A rule compares quantities as Go does after decoding, where an absent quantity is zero; malformed ones
never reach the rules (the decode step reports them), so they also read as zero here.
"""

from __future__ import annotations

from kubevirt_api.resource import Quantity, QuantityError

FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
ZERO = Quantity("0")

__all__ = ["FORMAT_ERROR", "ZERO", "Quantity", "QuantityError", "parse", "parse_or_zero"]


def parse(value: object) -> Quantity:
    """A quantity from its JSON form (string or number); raises :class:`QuantityError`."""
    return Quantity.coerce(value)


def parse_or_zero(value: object) -> Quantity:
    if value is None:
        return ZERO
    try:
        return Quantity.coerce(value)
    except QuantityError:
        return ZERO
