"""Structural OpenAPI v3 schemas of the API types, as the CRDs carry them.

The schema of a kind is derived from its pydantic model's JSON schema and then made *structural* the way
Kubernetes requires for CRDs (and the way KubeVirt's generated CRDs look): references inlined, optional
fields plain (no ``null`` alternatives unless the field is ``nullable``), quantities and int-or-string
fields as ``x-kubernetes-int-or-string``, embedded object metadata as a bare ``object``, the schema
markers the models carry (list/map types, ``nullable``, preserved unknown fields, enums, limits) kept,
pydantic's titles, descriptions and ``null`` defaults dropped.

``crd_schema(kind)`` is what the admission webhook validates raw objects against; it is computed once per
process (about 0.3 s for the largest kinds) and shared, so callers must treat it as read-only (a deep copy
costs ~9 ms, too much per admission request).
"""

from __future__ import annotations

from functools import cache
from typing import Final

from pydantic import BaseModel

from kubevirt_api.core.v1.register import OBJECT_MODELS
from kubevirt_api.view import JSON

__all__ = ["KIND_MODELS", "UnknownKindError", "crd_schema", "structural_schema"]


# Top-level kinds with a CRD, by kind name.
KIND_MODELS: Final[dict[str, type[BaseModel]]] = {model.__name__: model for model in OBJECT_MODELS}

# Model names whose schema is reduced to a bare object, like controller-gen does for ObjectMeta.
_OPAQUE_OBJECTS: Final = frozenset({"ObjectMeta"})
# Keys pydantic adds that a CRD schema does not have.
_DROPPED: Final = frozenset({"title", "description", "$defs"})


class UnknownKindError(KeyError):
    """No CRD schema exists for that kind."""


@cache
def crd_schema(kind: str) -> JSON:
    """The ``openAPIV3Schema`` of the CRD for ``kind`` (e.g. ``"VirtualMachineInstance"``)."""
    try:
        model = KIND_MODELS[kind]
    except KeyError:
        raise UnknownKindError(kind) from None
    return structural_schema(model, top_level=True)


def structural_schema(model: type[BaseModel], *, top_level: bool = False) -> JSON:
    """The structural schema of any model; ``top_level`` keeps a root object's ``metadata`` opaque."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    definitions: dict[str, JSON] = raw.get("$defs", {})
    schema = _convert(raw, definitions)
    if top_level and "metadata" in schema.get("properties", {}):
        schema["properties"]["metadata"] = {"type": "object"}
    return schema


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _convert(node: JSON, definitions: dict[str, JSON]) -> JSON:
    node = dict(node)
    extras = {k: v for k, v in node.items() if k not in _DROPPED}
    if "$ref" in extras:
        name = _ref_name(extras.pop("$ref"))
        base = {"type": "object"} if name in _OPAQUE_OBJECTS else _convert(definitions[name], definitions)
        return _merge(base, _convert_keywords(extras, definitions, free_form=False))
    if "allOf" in extras and len(extras["allOf"]) == 1:
        inner = extras.pop("allOf")[0]
        return _merge(_convert(inner, definitions), _convert_keywords(extras, definitions, free_form=False))
    if "anyOf" in extras:
        return _convert_any_of(extras, definitions)
    return _convert_keywords(extras, definitions)


def _convert_any_of(node: JSON, definitions: dict[str, JSON]) -> JSON:
    alternatives = [alt for alt in node.pop("anyOf") if alt.get("type") != "null"]
    rest = _convert_keywords(node, definitions, free_form=False)
    if len(alternatives) == 1:
        return _merge(_convert(alternatives[0], definitions), rest)
    kinds = sorted(alt.get("type", "") for alt in alternatives)
    if kinds == ["integer", "string"]:
        rest["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        rest["x-kubernetes-int-or-string"] = True
        return rest
    raise ValueError(f"cannot express a union of {kinds} in a structural schema")


def _convert_keywords(node: JSON, definitions: dict[str, JSON], *, free_form: bool = True) -> JSON:
    """Converts the keywords of one node; a node without a type is free-form unless it only adds markers."""
    out: JSON = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "default" and value is None:
            continue
        if key == "properties":
            if value:
                out["properties"] = {name: _convert(prop, definitions) for name, prop in value.items()}
        elif key == "items":
            out["items"] = _convert(value, definitions)
        elif key == "additionalProperties":
            if value is True or value == {}:
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif value is not False:
                out["additionalProperties"] = _convert(value, definitions)
        elif key == "required":
            if value:
                out["required"] = list(value)
        else:
            out[key] = value
    if free_form and not out.get("type") and not _is_untyped_allowed(out):
        # ``Any``: a free-form value, kept as is.
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _is_untyped_allowed(node: JSON) -> bool:
    return bool(node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields"))


def _merge(base: JSON, extras: JSON) -> JSON:
    """Field-level markers go on top of the field type's schema, whose shape (type, properties) wins."""
    merged = dict(base)
    for key, value in extras.items():
        if key not in merged or key not in ("type", "properties", "items", "additionalProperties"):
            merged[key] = value
    return merged
