"""Failures of API requests, one type per case a caller acts on differently.

A controller lets :class:`ConflictError` (a stale resourceVersion) escape ``reconcile`` so that the work
queue retries the key with backoff against a fresher cache; it never loops on a conflict itself.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "AlreadyExistsError",
    "ApiError",
    "ConflictError",
    "ConnectionFailedError",
    "ForbiddenError",
    "GoneError",
    "InvalidError",
    "NotFoundError",
    "error_from_response",
    "is_stale_write",
]


class ApiError(Exception):
    """The API server answered with a failure ``Status``."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")


class NotFoundError(ApiError):
    """404: the object (or its namespace) does not exist."""


class ConflictError(ApiError):
    """409 Conflict: the write carried a stale resourceVersion or failed a precondition."""


class AlreadyExistsError(ApiError):
    """409 AlreadyExists: an object with that name exists."""


class InvalidError(ApiError):
    """422: the object failed validation (schema or admission)."""


class ForbiddenError(ApiError):
    """403: RBAC or an admission webhook refused the request."""


class GoneError(ApiError):
    """410: the requested resourceVersion is too old (compacted); list again."""


_BY_STATUS: dict[int, type[ApiError]] = {
    404: NotFoundError,
    422: InvalidError,
    403: ForbiddenError,
    410: GoneError,
}


def error_from_response(status: int, body: bytes | str | dict[str, Any] | None) -> ApiError:
    """The error for an HTTP failure; reason and message come from the ``Status`` body if there is one."""
    document: Any = body
    if isinstance(body, (bytes, str)):
        try:
            document = json.loads(body) if body else None
        except ValueError:
            document = None
    reason, message = "", ""
    if isinstance(document, dict):
        reason = str(document.get("reason") or "")
        message = str(document.get("message") or "")
    elif isinstance(body, (bytes, str)):
        message = body.decode(errors="replace") if isinstance(body, bytes) else body
    if status == 409:
        return (
            AlreadyExistsError(status, reason, message)
            if reason == "AlreadyExists"
            else ConflictError(status, reason or "Conflict", message)
        )
    cls = _BY_STATUS.get(status, ApiError)
    return cls(status, reason, message)


# What the API server answers (422 Invalid, no causes) when a JSON patch does not apply to the stored
# object, e.g. its ``test`` operation found another value: the writer's cache was stale.
_PATCH_NOT_APPLIED = "the server rejected our request"


def is_stale_write(err: BaseException) -> bool:
    """Whether a write failed only because it was based on an old version of the object (a stale
    resourceVersion, or a JSON patch whose ``test`` no longer holds): retried, never a fault."""
    if isinstance(err, ConflictError):
        return True
    return isinstance(err, InvalidError) and err.message.startswith(_PATCH_NOT_APPLIED)


class ConnectionFailedError(ApiError):
    """The API server could not be reached (after retrying); ``status`` is 0."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "ConnectionFailed", message)
