"""KubeVirt's AdmissionResponse encoding (``pkg/util/webhooks``).

- validation failures: ``allowed: false``, status code 422, reason ``Invalid``, at most 10 causes, and a
  message joining the causes' messages with ", " (plus ", and N more validation errors" when cut);
- errors that are not about fields: code 400 with the error text;
- eviction denials: code 429 (``TooManyRequests``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubevirt.admission.causes import StatusCause

MAX_CAUSES = 10
HTTP_BAD_REQUEST = 400
HTTP_UNPROCESSABLE = 422
HTTP_TOO_MANY_REQUESTS = 429
HTTP_INTERNAL_ERROR = 500


@dataclass(frozen=True)
class AdmissionResponse:
    """What an admitter or mutator answers; ``uid`` is filled in by the server."""

    allowed: bool
    status: dict[str, Any] | None = None
    patch: list[dict[str, Any]] | None = None
    warnings: tuple[str, ...] = ()
    causes: tuple[StatusCause, ...] = field(default=(), compare=False)

    def to_dict(self, uid: str) -> dict[str, Any]:
        out: dict[str, Any] = {"uid": uid, "allowed": self.allowed}
        if self.status is not None:
            out["status"] = self.status
        if self.patch is not None:
            encoded = json.dumps(self.patch, separators=(",", ":")).encode()
            out["patch"] = base64.b64encode(encoded).decode()
            out["patchType"] = "JSONPatch"
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def allowed(*, warnings: Sequence[str] = ()) -> AdmissionResponse:
    return AdmissionResponse(allowed=True, warnings=tuple(warnings))


def patched(patch: list[dict[str, Any]], *, warnings: Sequence[str] = ()) -> AdmissionResponse:
    return AdmissionResponse(allowed=True, patch=patch, warnings=tuple(warnings))


def joined_message(causes: Sequence[StatusCause]) -> str:
    return ", ".join(cause.message for cause in causes)


def invalid(causes: Sequence[StatusCause]) -> AdmissionResponse:
    """A 422 refusal carrying at most :data:`MAX_CAUSES` causes."""
    shown = list(causes[:MAX_CAUSES])
    message = joined_message(shown)
    if len(causes) > MAX_CAUSES:
        message += f", and {len(causes) - MAX_CAUSES} more validation errors"
    status = {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Invalid",
        "details": {"causes": [cause.to_status() for cause in shown]},
        "code": HTTP_UNPROCESSABLE,
    }
    return AdmissionResponse(allowed=False, status=status, causes=tuple(causes))


def from_causes(causes: Sequence[StatusCause], *, warnings: Sequence[str] = ()) -> AdmissionResponse:
    """Allowed when there are no causes, else a 422 refusal."""
    return invalid(causes) if causes else allowed(warnings=warnings)


def error(message: str, code: int = HTTP_BAD_REQUEST) -> AdmissionResponse:
    """A refusal that is not about fields (bad request, missing cluster state, ...)."""
    status = {"metadata": {}, "status": "Failure", "message": message, "code": code}
    return AdmissionResponse(allowed=False, status=status)


def too_many_requests(message: str) -> AdmissionResponse:
    """An eviction denial: the eviction API turns 429 into "try again later"."""
    status = {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "TooManyRequests",
        "code": HTTP_TOO_MANY_REQUESTS,
    }
    return AdmissionResponse(allowed=False, status=status)
