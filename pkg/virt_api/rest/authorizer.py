"""Who may call a subresource: the front proxy's identity and a SubjectAccessReview.

The API server's aggregator forwards each request with its front-proxy client certificate and the
user in request headers (names from the ``extension-apiserver-authentication`` ConfigMap). Paths that
are not of the namespaced subresource shape are refused, as are requests without the certificate;
the rest are decided by a SubjectAccessReview on ``<resource>/<subresource>`` in the request's group.

The review is built from the path as the router reads it: the encoded path split at each ``/``, then
every segment decoded. A segment that decodes to something holding a ``/`` (or to ``.`` or ``..``) could
be read as one name by the router and as several segments by anyone decoding first, so such paths are
refused before any review, as are namespaces and names no object can have.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

from kubevirt.admission.k8s_names import dns1123_label, dns1123_subdomain
from kubevirt.virt_api.rest.discovery import GROUP, VERSIONS
from kubevirt.virt_api.rest.status import VM, VMI, StatusError, bad_request, not_found
from kubevirt_api.view import JSON

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
# The segments of ``/apis/<group>/<version>/namespaces/<ns>/<resource>/<name>`` (the first is the empty
# one before the leading slash) holding the namespace, the resource and the name.
NAMESPACE_INDEX, RESOURCE_INDEX, NAME_INDEX = 5, 6, 7
_ROUTED = (("namespace", NAMESPACE_INDEX), ("name", NAME_INDEX))
_KINDS = {"virtualmachines": VM, "virtualmachineinstances": VMI}


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


def path_segments(raw_path: str) -> list[str]:
    """The segments of an encoded path, each decoded: what aiohttp's router matches a route against."""
    return [unquote(segment) for segment in raw_path.split("/")]


def segment_problem(segment: str) -> str | None:
    """Why a decoded segment cannot be read unambiguously (client-go's path segment rule), or None."""
    if segment in (".", ".."):
        return f"may not be '{segment}'"
    if "/" in segment:
        return "may not contain '/'"
    return None


def path_refusal(raw_path: str, routed: Mapping[str, str]) -> StatusError | None:
    """The answer to a path that must not reach the authorizer or a handler, or None.

    ``routed`` is what the router matched (namespace and name); it must be what the segments say.
    """
    segments = path_segments(raw_path)
    for segment in segments:
        problem = segment_problem(segment)
        if problem is not None:
            return bad_request(f"invalid path segment {json.dumps(segment)}: {problem}")
    for key, index in _ROUTED:
        if key in routed and (index >= len(segments) or routed[key] != segments[index]):
            return bad_request(f"the path's {key} could not be read unambiguously")
    return _impossible_name(segments)


def _impossible_name(segments: list[str]) -> StatusError | None:
    """404 for a namespace or an object name no object can have: there is nothing to authorise."""
    if len(segments) <= NAMESPACE_INDEX or segments[NAMESPACE_INDEX - 1] != "namespaces":
        return None
    namespace = segments[NAMESPACE_INDEX]
    if dns1123_label(namespace):
        details = {"name": namespace, "kind": "namespaces"}
        return StatusError(404, "NotFound", f"namespaces {json.dumps(namespace)} not found", details)
    if len(segments) <= NAME_INDEX or segments[RESOURCE_INDEX] not in _KINDS:
        return None
    name = segments[NAME_INDEX]
    if dns1123_subdomain(name):
        return not_found(_KINDS[segments[RESOURCE_INDEX]], name)
    return None


def _unambiguous(raw_path: str) -> str | None:
    """The decoded path, unless a segment decodes to more than one."""
    segments = path_segments(raw_path)
    if any(segment_problem(segment) is not None for segment in segments):
        return None
    return "/".join(segments)


def resource_attributes(path: str, method: str) -> JSON:
    """``/apis/<group>/<version>/namespaces/<ns>/<resource>/<name>/<subresource...>`` as RBAC sees it;
    ``path`` is the encoded path, read as the router reads it."""
    parts = path_segments(path)
    for part in parts:
        if segment_problem(part) is not None:
            raise ReviewNotPossibleError(f"invalid path segment in request: {path}")
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
        """``path`` is the encoded path. Raises what ``create_review`` raises when the review could not
        be made (a 500)."""
        if _unambiguous(path) in NO_AUTH_PATHS:
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
