"""Reading cached objects alike whether the informer keeps kubevirt_api models or plain JSON dicts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kubevirt.timestamps import parse_timestamp as parse_time
from kubevirt_api.resource import Quantity, QuantityError
from kubevirt_api.view import View

__all__ = ["as_json", "parse_time", "phase_of", "quantity", "unix_seconds", "view_of"]


def as_json(obj: Any) -> Mapping[str, Any]:
    """The object's JSON form: a dict as it is, a model through ``to_dict()``."""
    if isinstance(obj, Mapping):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        data = to_dict()
        if isinstance(data, Mapping):
            return data
    raise TypeError(f"not an API object: {type(obj).__name__}")


def view_of(obj: Any) -> View:
    return View.of(as_json(obj))


def phase_of(obj: Any) -> str:
    """``status.phase`` without converting a model (update handlers see every change of every object)."""
    if isinstance(obj, Mapping):
        status = obj.get("status")
        phase = status.get("phase") if isinstance(status, Mapping) else None
    else:
        phase = getattr(getattr(obj, "status", None), "phase", None)
    return phase if isinstance(phase, str) else ""


def unix_seconds(value: Any) -> int | None:
    """Go's ``Time.Unix()``: whole seconds since the epoch, rounded down."""
    moment = parse_time(value)
    return math.floor(moment.timestamp()) if moment is not None else None


def quantity(value: Any) -> Quantity | None:
    """A resource quantity; absent reads as zero (Go's ``ResourceList`` getters), malformed as None."""
    try:
        return Quantity.coerce(value)
    except QuantityError:
        return None
