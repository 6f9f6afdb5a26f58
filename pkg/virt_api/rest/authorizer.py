"""Who may call a subresource: KubeVirt's open paths, path rules and SubjectAccessReviews.

The front proxy's identity and the decision's steps are the shared aggregation pieces'
(:mod:`kubevirt.service.aggregation`); what is virt-api's own is which paths are open, that paths not of
the namespaced subresource shape are refused, that a VM or VMI name no object can have is a 404, and that
a review is made on ``<resource>/<subresource>`` in the request's group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubevirt.admission.k8s_names import dns1123_subdomain
from kubevirt.service.aggregation import paths
from kubevirt.service.aggregation.authorizer import (
    RequestAuthorizer,
    ReviewNotPossibleError,
    subject_access_review,
)
from kubevirt.service.aggregation.identity import RequestHeaderNames, header_extras, header_values
from kubevirt.service.aggregation.paths import NAME_INDEX, RESOURCE_INDEX, path_segments, segment_problem
from kubevirt.virt_api.rest.discovery import GROUP, VERSIONS
from kubevirt.virt_api.rest.status import VM, VMI, StatusError, not_found
from kubevirt_api.view import JSON

NO_AUTH_PATHS = frozenset(
    {
        "/",
        "/apis",
        "/healthz",
        "/metrics",  # KubeVirt serves it outside the authorized API
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
_KINDS = {"virtualmachines": VM, "virtualmachineinstances": VMI}


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


def path_refusal(raw_path: str, routed: Mapping[str, str]) -> StatusError | None:
    """The shared path rules, and a 404 for a VM or VMI name no object can have."""
    refused = paths.path_refusal(raw_path, routed)
    if refused is not None:
        return refused
    return _impossible_name(path_segments(raw_path))


def _impossible_name(segments: list[str]) -> StatusError | None:
    if (
        not paths.in_namespace(segments)
        or len(segments) <= NAME_INDEX
        or segments[RESOURCE_INDEX] not in _KINDS
    ):
        return None
    name = segments[NAME_INDEX]
    if dns1123_subdomain(name):
        return not_found(_KINDS[segments[RESOURCE_INDEX]], name)
    return None


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
    user = header_values(headers, names.user)
    if user is None:
        raise ReviewNotPossibleError("a valid user header is required for authorization")
    groups = header_values(headers, names.group)
    if groups is None:
        raise ReviewNotPossibleError("a valid group header is required for authorization")
    spec: JSON = {"user": user[0], "groups": groups, "extra": header_extras(headers, names.extra_prefixes)}
    spec["resourceAttributes"] = resource_attributes(path, method)
    return subject_access_review(spec)


@dataclass
class Authorizer(RequestAuthorizer):
    """virt-api's paths and reviews on the shared decision."""

    def is_open(self, path: str) -> bool:
        return paths.unambiguous(path) in NO_AUTH_PATHS

    def review(self, path: str, method: str, headers: Sequence[tuple[str, str]]) -> JSON:
        return access_review(path, method, headers, self.names)
