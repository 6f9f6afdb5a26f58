"""Who may call a subresource: the front proxy's identity and a SubjectAccessReview.

The API server's aggregator forwards each request with its front-proxy client certificate and the
user in request headers (names from the ``extension-apiserver-authentication`` ConfigMap). Paths that
are not of the namespaced subresource shape are refused, as are requests without the certificate;
the rest are decided by a SubjectAccessReview on ``<resource>/<subresource>`` in the request's group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from kubevirt.virt_api.rest.discovery import GROUP, VERSIONS

JSON = dict[str, Any]

NO_AUTH_PATHS = frozenset(
    {
        "/",
        "/apis",
        "/healthz",
        "/openapi/v2",
        "/openapi/v3",
        "/start-profiler",
        "/stop-profiler",
        "/dump-profiler",
    }
    | {
        f"/apis/{GROUP}/{version}{suffix}"
        for version in VERSIONS
        for suffix in (
            "",
            "/version",
            "/guestfs",
            "/healthz",
            "/start-cluster-profiler",
            "/stop-cluster-profiler",
            "/dump-cluster-profiler",
        )
    }
)
NOT_AUTHENTICATED = "request is not authenticated"


class ReviewNotPossibleError(ValueError):
    """The request cannot be put into a SubjectAccessReview; the message is the 401's reason."""


@dataclass
class RequestHeaderNames:
    """The headers carrying the user, taken from the API server's ConfigMap (KubeVirt's defaults first)."""

    user: list[str] = field(default_factory=lambda: ["X-Remote-User"])
    group: list[str] = field(default_factory=lambda: ["X-Remote-Group"])
    extra_prefixes: list[str] = field(default_factory=lambda: ["X-Remote-Extra-"])


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def rbac_verb(method: str, name: str) -> str:
    verbs = {"POST": "create", "PUT": "update", "PATCH": "patch"}
    upper = method.upper()
    if upper in verbs:
        return verbs[upper]
    if upper in ("GET", "HEAD"):
        return "get" if name else "list"
    if upper == "DELETE":
        return "delete" if name else "deletecollection"
    raise ReviewNotPossibleError(f"unknown http verb in request: {method}")


def resource_attributes(path: str, method: str) -> JSON:
    """``/apis/<group>/<version>/namespaces/<ns>/<resource>/<name>/<subresource...>`` as RBAC sees it."""
    parts = path.split("/")
    if len(parts) >= 9:
        group, version, namespace, resource, name = parts[2], parts[3], parts[5], parts[6], parts[7]
        subresource = parts[8] if parts[8] == "portforward" else "/".join(parts[8:])
        if resource not in ("virtualmachineinstances", "virtualmachines"):
            raise ReviewNotPossibleError(f"unknown resource type {resource}")
        return {
            "namespace": namespace,
            "verb": rbac_verb(method, name),
            "group": group,
            "version": version,
            "resource": resource,
            "subresource": subresource,
            "name": name,
        }
    if len(parts) == 7:
        group, version, namespace, resource = parts[2], parts[3], parts[5], parts[6]
        if resource != "expand-vm-spec":
            raise ReviewNotPossibleError(f"unknown resource type {resource}")
        return {
            "namespace": namespace,
            "verb": rbac_verb(method, ""),
            "group": group,
            "version": version,
            "resource": resource,
        }
    raise ReviewNotPossibleError(f"unknown api endpoint: {path}")


def access_review(
    path: str, method: str, headers: Sequence[tuple[str, str]], names: RequestHeaderNames
) -> JSON:
    """The SubjectAccessReview for a request; ``headers`` keeps repeated headers (groups, extras)."""
    user = _values(headers, names.user)
    if user is None:
        raise ReviewNotPossibleError("a valid user header is required for authorization")
    groups = _values(headers, names.group)
    if groups is None:
        raise ReviewNotPossibleError("a valid group header is required for authorization")
    spec: JSON = {"user": user[0], "groups": groups, "extra": _extras(headers, names.extra_prefixes)}
    spec["resourceAttributes"] = resource_attributes(path, method)
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


@dataclass
class Authorizer:
    """Decides one request; ``create_review`` posts a SubjectAccessReview and returns the answer."""

    create_review: Callable[[JSON], JSON]
    names: RequestHeaderNames = field(default_factory=RequestHeaderNames)

    def decide(
        self, path: str, method: str, has_client_certificate: bool, headers: Sequence[tuple[str, str]]
    ) -> Decision:
        """Raises what ``create_review`` raises when the review could not be made (a 500)."""
        if path in NO_AUTH_PATHS:
            return Decision(True)
        if not has_client_certificate:
            return Decision(False, NOT_AUTHENTICATED)
        try:
            review = access_review(path, method, headers, self.names)
        except ReviewNotPossibleError as err:
            return Decision(False, str(err))
        answer = self.create_review(review)
        status = answer.get("status") or {}
        if status.get("allowed"):
            return Decision(True)
        return Decision(False, str(status.get("reason") or ""))


def _values(headers: Sequence[tuple[str, str]], names: Sequence[str]) -> list[str] | None:
    """The values of the first of ``names`` that is present (header names compare case-insensitively)."""
    for name in names:
        values = [value for key, value in headers if key.lower() == name.lower()]
        if values:
            return values
    return None


def _extras(headers: Sequence[tuple[str, str]], prefixes: Sequence[str]) -> dict[str, list[str]]:
    extras: dict[str, list[str]] = {}
    for prefix in prefixes:
        for key, value in headers:
            if key.lower().startswith(prefix.lower()):
                extras.setdefault(unquote(key[len(prefix) :].lower()), []).append(value)
    return extras
