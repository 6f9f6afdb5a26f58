"""The JSON KubeVirt's Go code would write for an object: ``to_go_json(vmi)``.

``ApiModel.to_dict()`` writes what is set. Go's encoder also writes every field that is not ``omitempty``
(``""``, ``0``, ``false``, ``null``) and every struct value even when empty (``status: {}``,
``status.guestOSInfo: {}``, a zero ``metav1.Time`` as ``null``, a zero Quantity as ``"0"``), and drops
``omitempty`` fields that hold an empty value (``[]``, ``{}``, ``""``, ``0``, ``false``). ``to_go_json``
reproduces that, field order included, from the layout table in :mod:`kubevirt_api._go_layout`.
It is slower than ``to_dict`` (a Python walk): use it where byte-level parity with KubeVirt matters.
"""

from __future__ import annotations

import types
import typing
from functools import cache
from typing import Any, Final, NamedTuple

from pydantic import BaseModel

from kubevirt_api._go_layout import GO_LAYOUT
from kubevirt_api.resource import Quantity

__all__ = ["layout_key", "to_go_json"]

_MODULE_PREFIX: Final = "kubevirt_api."
# Zero values Go writes for fields that are always emitted.
_ZERO: Final[dict[str, Any]] = {
    "s": "",
    "i": 0,
    "f": 0,
    "b": False,
    "l": None,
    "m": None,
    "a": None,
    "p": None,
    "S0": None,
    "T": None,
    "Q": "0",
    "I": 0,
    "D": "0s",
}
# Kinds whose zero value an ``omitempty`` field drops; struct values (S, T, Q, I, D) are never dropped.
_OMITTABLE: Final = frozenset({"s", "i", "f", "b", "l", "m", "a", "p", "S0"})


class _Field(NamedTuple):
    alias: str
    attribute: str
    kind: str
    omit_empty: bool
    struct: type[BaseModel] | None  # the model of an ``S`` field


def layout_key(model: type[BaseModel]) -> str:
    """The table key of a model: its module path below ``kubevirt_api`` and its name."""
    return f"{model.__module__.removeprefix(_MODULE_PREFIX)}.{model.__name__}"


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for member in typing.get_args(annotation):
            found = _model_in(member)
            if found is not None:
                return found
    return None


@cache
def _layout(model: type[BaseModel]) -> tuple[_Field, ...]:
    spec = GO_LAYOUT[layout_key(model)].split()
    attributes = {(info.alias or name): name for name, info in model.model_fields.items()}
    hints = typing.get_type_hints(model)
    fields = []
    for alias, kind in zip(spec[::2], spec[1::2], strict=True):
        attribute = attributes[alias]
        struct = _model_in(hints[attribute]) if kind.startswith("S") and kind != "S0" else None
        fields.append(_Field(alias, attribute, kind.rstrip("?"), kind.endswith("?"), struct))
    return tuple(fields)


def _empty(value: Any) -> bool:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (str, int, float, list, dict)):
        return len(value) == 0 if isinstance(value, (str, list, dict)) else value == 0
    return False


def _encode(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return to_go_json(value)
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if isinstance(value, dict):  # a Go map: encoding/json writes its keys sorted
        return {key: _encode(value[key]) for key in sorted(value)}
    if isinstance(value, Quantity):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


@cache
def _zero_struct(model: type[BaseModel]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in _layout(model):
        if field.kind == "S" and field.struct is not None:
            out[field.alias] = _zero_struct(field.struct)
        elif not field.omit_empty or field.kind not in _OMITTABLE:
            out[field.alias] = _ZERO[field.kind]
    return out


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    return value


def to_go_json(obj: BaseModel) -> dict[str, Any]:
    """``obj`` as KubeVirt's Go types marshal it (after Go decoded the same JSON)."""
    out: dict[str, Any] = {}
    for field in _layout(type(obj)):
        value = getattr(obj, field.attribute)
        if value is None:
            if field.kind == "S" and field.struct is not None:
                out[field.alias] = _copy(_zero_struct(field.struct))
            elif not field.omit_empty or field.kind not in _OMITTABLE:
                out[field.alias] = _ZERO[field.kind]
            continue
        if field.omit_empty and field.kind in _OMITTABLE and field.kind != "p" and _empty(value):
            continue
        out[field.alias] = _encode(value)
    return out
