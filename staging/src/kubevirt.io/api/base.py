"""The base of every API type: JSON names, parsing with field-path errors, dumping like Go does.

Conventions shared by all models:

* attributes are snake_case; the JSON (camelCase, or whatever KubeVirt spells) name is the alias, and
  both are accepted on input (``populate_by_name``);
* optional fields default to ``None`` and ``None`` is never dumped, like Go's ``omitempty``;
* values must have the JSON type Go expects (strict: no ``"2"`` for an integer, no ``1.0`` for an int32);
* unknown JSON fields are dropped, as Go's decoder does. Every field KubeVirt v1.6 declares is modelled,
  so nothing the project reads is lost; rejecting unknown fields is the job of the OpenAPI schema check
  (``kubevirt_api.openapi``), exactly where KubeVirt does it;
* enum-like fields are plain ``str`` (with the known values as constants) because KubeVirt accepts unknown
  values at decode time and rejects them in validation.

Known differences of ``to_dict()`` from Go's marshalling: a zero ``metav1.Time`` is left out rather than
written as ``null`` (``metadata.creationTimestamp: null``), struct values Go always writes (``status: {}``,
``status.guestOSInfo: {}``, a zero Quantity as ``"0"``) only appear when set, and empty ``omitempty``
values that were set are kept. ``kubevirt_api.gojson.to_go_json`` writes exactly what Go writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, ValidationError, WithJsonSchema

__all__ = [
    "ApiModel",
    "ApiParseError",
    "Condition",
    "FieldCause",
    "Float",
    "Int",
    "Int32",
    "Int64",
    "Time",
    "TypeMeta",
    "Uint",
    "Uint8",
    "Uint32",
    "Uint64",
    "format_path",
]


def _integer_schema(bits: int, *, signed: bool, schema_format: str | None) -> dict[str, Any]:
    """The CRD schema of a Go integer type: its range, and the format controller-gen writes for it."""
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    schema: dict[str, Any] = {"type": "integer"}
    if schema_format:
        schema["format"] = schema_format
    schema.update(minimum=low, maximum=high)
    return schema


def _bounds(schema: dict[str, Any]) -> Any:
    return Field(ge=schema["minimum"], le=schema["maximum"])


# Go's integer types: a value outside the type's range is refused, as Go's decoder refuses it (``int``
# and ``uint`` are 64 bits wide on every platform KubeVirt runs on). The schema keeps the format
# KubeVirt's CRDs carry, which for the unsigned types is that of the signed type of the same width.
_INT = _integer_schema(64, signed=True, schema_format=None)
_INT32 = _integer_schema(32, signed=True, schema_format="int32")
_INT64 = _integer_schema(64, signed=True, schema_format="int64")
_UINT = _integer_schema(64, signed=False, schema_format=None)
_UINT8 = _integer_schema(8, signed=False, schema_format=None)
_UINT32 = _integer_schema(32, signed=False, schema_format="int32")
_UINT64 = _integer_schema(64, signed=False, schema_format="int64")
Int = Annotated[int, _bounds(_INT), WithJsonSchema(_INT)]
Int32 = Annotated[int, _bounds(_INT32), WithJsonSchema(_INT32)]
Int64 = Annotated[int, _bounds(_INT64), WithJsonSchema(_INT64)]
Uint = Annotated[int, _bounds(_UINT), WithJsonSchema(_UINT)]
Uint8 = Annotated[int, _bounds(_UINT8), WithJsonSchema(_UINT8)]
Uint32 = Annotated[int, _bounds(_UINT32), WithJsonSchema(_UINT32)]
Uint64 = Annotated[int, _bounds(_UINT64), WithJsonSchema(_UINT64)]
# metav1.Time stays an RFC 3339 string in Python, so it round-trips byte for byte.
Time = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]


def _go_float(value: float) -> float | int:
    # Go's encoder writes a whole float32/float64 without a fraction: 5, not 5.0.
    return int(value) if value.is_integer() and abs(value) < 1e21 else value


Float = Annotated[float, PlainSerializer(_go_float, when_used="json")]


class FieldCause:
    """One problem found while parsing, with the JSON path of the offending field."""

    __slots__ = ("message", "path")

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def __repr__(self) -> str:
        return f"FieldCause({self.path!r}, {self.message!r})"


class ApiParseError(ValueError):
    """The JSON does not decode into the API type; ``causes`` name each offending field path."""

    def __init__(self, kind: str, causes: Sequence[FieldCause]) -> None:
        self.kind = kind
        self.causes = list(causes)
        super().__init__("; ".join(str(cause) for cause in self.causes) or f"invalid {kind}")


def format_path(parts: Sequence[str | int]) -> str:
    """``("spec", "domain", "devices", "disks", 1, "name")`` → ``spec.domain.devices.disks[1].name``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _data_path(data: Any, loc: Sequence[str | int]) -> list[str | int]:
    """Keeps only the parts of a pydantic error location that are real keys/indexes of the input.

    Pydantic inserts union-member and validator tags into locations; walking the input drops them.
    """
    path: list[str | int] = []
    current = data
    for part in loc:
        if _has_step(current, part):
            current = current[part]
            path.append(part)
        elif isinstance(part, str) and not isinstance(current, (Mapping, list)):
            continue  # a tag below a scalar: the scalar itself is at fault
        elif isinstance(current, Mapping) and isinstance(part, str) and _looks_like_field(part):
            path.append(part)  # a missing required field
            current = None
    return path


def _has_step(current: Any, part: str | int) -> bool:
    if isinstance(current, Mapping):
        return isinstance(part, str) and part in current
    return isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)


def _looks_like_field(part: str) -> bool:
    # pydantic's own tags contain brackets, spaces or dashes (e.g. "function-plain[...]", "int").
    return part.isidentifier() and part not in {"int", "str", "float", "bool", "list", "dict"}


class ApiModel(BaseModel):
    """Base of all KubeVirt API types (see the module docstring for the conventions)."""

    model_config = ConfigDict(
        populate_by_name=True,
        extra="ignore",
        # JSON types as Go decodes them: no "2" for an integer, no 1.0 for an int32, no "true" for a bool.
        strict=True,
        validate_assignment=False,
        arbitrary_types_allowed=False,
        protected_namespaces=(),
        ser_json_inf_nan="constants",
        # Validators are built on first use: importing the ~300 types stays cheap for tools that need few.
        defer_build=True,
    )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Parses decoded JSON; raises :class:`ApiParseError` naming the field path of each problem."""
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            # One cause per field: the members of a union (int-or-string) each report the same field.
            messages: dict[str, list[str]] = {}
            for error in err.errors(include_url=False):
                text = error["msg"].removeprefix("Value error, ")
                messages.setdefault(format_path(_data_path(data, error["loc"])), []).append(text)
            causes = [FieldCause(path, " or ".join(texts)) for path, texts in messages.items()]
            raise ApiParseError(cls.__name__, causes) from None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: aliases as keys, unset (``None``) fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class TypeMeta(ApiModel):
    """``apiVersion`` and ``kind``, inlined at the top of every object."""

    kind: str | None = None
    api_version: str | None = Field(default=None, alias="apiVersion")


class Condition(ApiModel):
    """The fields every KubeVirt condition type shares (VMI, VM, migration, replica set, pool, KubeVirt)."""

    type: str
    status: str
    last_probe_time: Time | None = Field(
        default=None, alias="lastProbeTime", json_schema_extra={"nullable": True}
    )
    last_transition_time: Time | None = Field(
        default=None, alias="lastTransitionTime", json_schema_extra={"nullable": True}
    )
    reason: str | None = None
    message: str | None = None
