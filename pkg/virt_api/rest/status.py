"""KubeVirt's refusals as ``metav1.Status`` errors, worded as apimachinery's constructors word them."""

from __future__ import annotations

from typing import Any

from kubevirt.service.aggregation.status import StatusError, bad_request
from kubevirt_api.core.v1.constants import GROUP_NAME

# StatusError and bad_request are the shared ones, named here with KubeVirt's constructors for the many
# subresource modules that use them.
__all__ = ["VM", "VMI", "StatusError", "bad_request", "conflict", "forbidden", "internal", "not_found"]

VM = "virtualmachine"
VMI = "virtualmachineinstance"


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
