"""Decoding ``admission.k8s.io`` AdmissionReview requests into a typed request."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

API_GROUP = "admission.k8s.io"
SUPPORTED_API_VERSIONS = (f"{API_GROUP}/v1", f"{API_GROUP}/v1beta1")

CREATE = "CREATE"
UPDATE = "UPDATE"
DELETE = "DELETE"
CONNECT = "CONNECT"
OPERATIONS = (CREATE, UPDATE, DELETE, CONNECT)


class ReviewDecodeError(ValueError):
    """The body is not an AdmissionReview this server can answer (answered with HTTP 400)."""


@dataclass(frozen=True)
class GroupVersionResource:
    group: str = ""
    version: str = ""
    resource: str = ""


@dataclass(frozen=True)
class AdmissionRequest:
    """The parts of ``AdmissionReview.request`` the admitters use; objects stay plain JSON."""

    uid: str
    operation: str
    resource: GroupVersionResource
    sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    username: str = ""
    groups: tuple[str, ...] = ()
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False
    kind: str = ""
    # userInfo.extra: what the authenticator adds, e.g. the node a service account token is bound to.
    extra: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class AdmissionReview:
    api_version: str
    request: AdmissionRequest


def _mapping(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ReviewDecodeError(f"{what} must be an object, got {type(value).__name__}")
    return value


def _string(data: dict[str, Any], key: str, what: str) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReviewDecodeError(f"{what}.{key} must be a string")
    return value


def _optional_object(data: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = data.get(key)
    if value is None:
        return None
    return _mapping(value, f"request.{key}")


def decode_review(body: bytes) -> AdmissionReview:
    """Parse an AdmissionReview; raise :class:`ReviewDecodeError` with a readable reason."""
    try:
        document = json.loads(body)
    except ValueError as err:  # JSONDecodeError, bad UTF-8, integers beyond Python's digit limit
        raise ReviewDecodeError(f"request body is not valid JSON: {err}") from None
    except RecursionError:
        raise ReviewDecodeError("request body is nested too deeply") from None
    review = _mapping(document, "AdmissionReview")
    kind = review.get("kind")
    if kind != "AdmissionReview":
        raise ReviewDecodeError(f"expected kind AdmissionReview, got {kind!r}")
    api_version = review.get("apiVersion")
    if api_version not in SUPPORTED_API_VERSIONS:
        raise ReviewDecodeError(
            f"unsupported apiVersion {api_version!r}, expected one of {list(SUPPORTED_API_VERSIONS)}"
        )
    if review.get("request") is None:
        raise ReviewDecodeError("AdmissionReview has no request")
    raw = _mapping(review["request"], "request")
    uid = _string(raw, "uid", "request")
    if not uid:
        raise ReviewDecodeError("request.uid is required")
    operation = _string(raw, "operation", "request")
    if operation not in OPERATIONS:
        raise ReviewDecodeError(f"request.operation {operation!r} is not one of {list(OPERATIONS)}")
    resource_raw = _mapping(raw.get("resource") or {}, "request.resource")
    resource = GroupVersionResource(
        group=_string(resource_raw, "group", "request.resource"),
        version=_string(resource_raw, "version", "request.resource"),
        resource=_string(resource_raw, "resource", "request.resource"),
    )
    user = _mapping(raw.get("userInfo") or {}, "request.userInfo")
    groups = user.get("groups") or []
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise ReviewDecodeError("request.userInfo.groups must be a list of strings")
    extra = _mapping(user.get("extra") or {}, "request.userInfo.extra")
    for key, values in extra.items():
        if values is not None and (
            not isinstance(values, list) or not all(isinstance(v, str) for v in values)
        ):
            raise ReviewDecodeError(f"request.userInfo.extra[{key}] must be a list of strings")
    kind_raw = _mapping(raw.get("kind") or {}, "request.kind")
    dry_run = raw.get("dryRun", False)
    if dry_run is None:
        dry_run = False
    if not isinstance(dry_run, bool):
        raise ReviewDecodeError("request.dryRun must be a boolean")
    request = AdmissionRequest(
        uid=uid,
        operation=operation,
        resource=resource,
        sub_resource=_string(raw, "subResource", "request"),
        name=_string(raw, "name", "request"),
        namespace=_string(raw, "namespace", "request"),
        username=_string(user, "username", "request.userInfo"),
        groups=tuple(groups),
        object=_optional_object(raw, "object"),
        old_object=_optional_object(raw, "oldObject"),
        dry_run=dry_run,
        kind=_string(kind_raw, "kind", "request.kind"),
        extra={key: list(values or []) for key, values in extra.items()},
    )
    return AdmissionReview(api_version=str(api_version), request=request)
