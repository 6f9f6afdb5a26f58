"""The cause of a refusal: KubeVirt's ``metav1.StatusCause`` with its cause types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# metav1.CauseType values used by KubeVirt's admitters.
FIELD_VALUE_INVALID = "FieldValueInvalid"
FIELD_VALUE_REQUIRED = "FieldValueRequired"
FIELD_VALUE_DUPLICATE = "FieldValueDuplicate"
FIELD_VALUE_NOT_SUPPORTED = "FieldValueNotSupported"
FIELD_VALUE_NOT_FOUND = "FieldValueNotFound"
UNEXPECTED_SERVER_RESPONSE = "UnexpectedServerResponse"


@dataclass(frozen=True, slots=True)
class StatusCause:
    """One reason an object was refused; ``type`` and ``field`` are empty for schema errors."""

    type: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        """The conformance corpus' form (``virtctl validate`` prints it): every key, named ``type``."""
        return {"type": self.type, "message": self.message, "field": self.field}

    def to_status(self) -> dict[str, str]:
        """The form inside a ``metav1.Status``: Go names the type ``reason`` and omits empty values."""
        wire = {"reason": self.type, "message": self.message, "field": self.field}
        return {key: value for key, value in wire.items() if value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StatusCause:
        return cls(
            type=str(data.get("type", "")),
            message=str(data.get("message", "")),
            field=str(data.get("field", "")),
        )


def invalid(field: object, message: str) -> StatusCause:
    return StatusCause(FIELD_VALUE_INVALID, message, str(field))


def required(field: object, message: str) -> StatusCause:
    return StatusCause(FIELD_VALUE_REQUIRED, message, str(field))


def duplicate(field: object, message: str) -> StatusCause:
    return StatusCause(FIELD_VALUE_DUPLICATE, message, str(field))


def not_supported(field: object, message: str) -> StatusCause:
    return StatusCause(FIELD_VALUE_NOT_SUPPORTED, message, str(field))


def not_found(field: object, message: str) -> StatusCause:
    return StatusCause(FIELD_VALUE_NOT_FOUND, message, str(field))


def message_only(message: str) -> StatusCause:
    """A cause without type or field, as the schema check and decode failures give."""
    return StatusCause("", message, "")
