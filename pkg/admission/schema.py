"""The OpenAPI check KubeVirt's webhooks run on raw objects (``webhookutils.ValidateSchema``).

A small validator for structural schemas that words its findings like go-openapi does
(``spec.domain.devices.disks.turbo in body is a forbidden property``): paths name properties only, never
list indexes, and unknown properties are refused unless the schema preserves them. Quantities
(int-or-string nodes) are only type-checked; their syntax is left to decoding, as in KubeVirt.
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any

from kubevirt.admission import causes as c
from kubevirt.admission.causes import StatusCause
from kubevirt_api.openapi import UnknownKindError, crd_schema
from kubevirt_api.view import JSON

# Below these names KubeVirt's validator does not look (the API server owns object metadata).
_OPAQUE_ROOT_FIELDS = frozenset({"metadata"})


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _matches_type(expected: str, value: Any) -> bool:
    actual = _type_of(value)
    if expected == "number":
        return actual in ("number", "integer")
    if expected == "integer" and actual == "number":
        return math.isfinite(value) and float(value).is_integer()
    return actual == expected


def _go_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@cache
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


class _Walker:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def fail(self, path: str, message: str) -> None:
        self.errors.append(f"{path} in body {message}")

    def node(self, schema: JSON, value: Any, path: str) -> None:
        if value is None:
            # go-openapi: null only where the schema allows it (the API server would have pruned it).
            expected_type = schema.get("type")
            if isinstance(expected_type, str) and not schema.get("nullable"):
                self.fail(path, f'must be of type {expected_type}: "null"')
            return
        int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
        expected = schema.get("type")
        if int_or_string:
            if _type_of(value) not in ("integer", "string"):
                self.fail(path, f'must be of type integer-or-string: "{_type_of(value)}"')
            return
        if isinstance(expected, str) and not _matches_type(expected, value):
            self.fail(path, f'must be of type {expected}: "{_type_of(value)}"')
            return
        self._enum(schema, value, path)
        if isinstance(value, str):
            self._string(schema, value, path)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self._number(schema, value, path)
        elif isinstance(value, list):
            self._array(schema, value, path)
        elif isinstance(value, dict):
            self._object(schema, value, path)

    def _enum(self, schema: JSON, value: Any, path: str) -> None:
        enum = schema.get("enum")
        if isinstance(enum, list) and value not in enum:
            listing = " ".join(_go_value(v) for v in enum)
            self.fail(path, f"should be one of [{listing}]")

    def _string(self, schema: JSON, value: str, path: str) -> None:
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            self.fail(path, f"should be at most {schema['maxLength']} chars long")
        if "minLength" in schema and len(value) < schema["minLength"]:
            self.fail(path, f"should be at least {schema['minLength']} chars long")
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not _pattern(pattern).search(value):
            self.fail(path, f"should match '{pattern}'")

    def _number(self, schema: JSON, value: float, path: str) -> None:
        if "maximum" in schema and value > schema["maximum"]:
            self.fail(path, f"should be less than or equal to {_go_value(schema['maximum'])}")
        if "minimum" in schema and value < schema["minimum"]:
            self.fail(path, f"should be greater than or equal to {_go_value(schema['minimum'])}")

    def _array(self, schema: JSON, value: list[Any], path: str) -> None:
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            self.fail(path, f"should have at most {schema['maxItems']} items")
        if "minItems" in schema and len(value) < schema["minItems"]:
            self.fail(path, f"should have at least {schema['minItems']} items")
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                self.node(items, item, path)

    def _object(self, schema: JSON, value: JSON, path: str) -> None:
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        prefix = f"{path}." if path else ""
        if isinstance(properties, dict):
            if not preserve and not isinstance(extra, dict) and extra is not True:
                for key in value:
                    if key not in properties:
                        self.fail(f"{prefix}{key}", "is a forbidden property")
            for key in schema.get("required") or ():
                if key not in value:
                    self.fail(f"{prefix}{key}", "is required")
            for key, sub in properties.items():
                if key in value and isinstance(sub, dict):
                    if not path and key in _OPAQUE_ROOT_FIELDS:
                        continue
                    self.node(sub, value[key], f"{prefix}{key}")
        if isinstance(extra, dict):
            for key, item in value.items():
                if not isinstance(properties, dict) or key not in properties:
                    self.node(extra, item, f"{prefix}{key}")


def validate_against(schema: JSON, document: Any) -> list[str]:
    """go-openapi-worded findings of ``document`` against a structural ``schema``."""
    walker = _Walker()
    walker.node(schema, document, "")
    return walker.errors


def prepare(kinds: tuple[str, ...]) -> None:
    """Builds the schemas of ``kinds`` now: from the models, each takes a tenth of a CPU-second or more,
    which the first review of the kind would otherwise pay while the API server waits on it."""
    for kind in kinds:
        crd_schema(kind)


def schema_check(kind: str, document: JSON) -> list[StatusCause]:
    """Message-only causes for ``document`` against the CRD schema of ``kind`` (none for unknown kinds)."""
    try:
        schema = crd_schema(kind)
    except UnknownKindError:
        return []
    return [c.message_only(message) for message in validate_against(schema, document)]
