"""Refusals as Kubernetes ``metav1.Status`` errors, worded as apimachinery's constructors word them."""

from __future__ import annotations

from typing import Any

from kubevirt_api.core.v1.constants import GROUP_NAME

VM = "virtualmachine"
VMI = "virtualmachineinstance"


class StatusError(Exception):
    """A request refused with an HTTP code and a ``Status`` body."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def body(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            document["details"] = self.details
        document["code"] = self.code
        return document


def _object_details(resource: str, name: str) -> dict[str, Any]:
    return {"name": name, "group": GROUP_NAME, "kind": resource}


def conflict(resource: str, name: str, why: str) -> StatusError:
    message = f'Operation cannot be fulfilled on {resource}.{GROUP_NAME} "{name}": {why}'
    return StatusError(409, "Conflict", message, _object_details(resource, name))


def not_found(resource: str, name: str) -> StatusError:
    message = f'{resource}.{GROUP_NAME} "{name}" not found'
    return StatusError(404, "NotFound", message, _object_details(resource, name))


def forbidden(resource: str, name: str, why: str) -> StatusError:
    message = f'{resource}.{GROUP_NAME} "{name}" is forbidden: {why}'
    return StatusError(403, "Forbidden", message, _object_details(resource, name))


def internal(why: str) -> StatusError:
    return StatusError(
        500, "InternalError", f"Internal error occurred: {why}", {"causes": [{"message": why}]}
    )


def bad_request(why: str) -> StatusError:
    return StatusError(400, "BadRequest", why)
