"""Who may create an UploadTokenRequest: CDI's rules on the shared aggregated-server authorizer.

The front proxy's certificate and the user headers are read as virt-api reads them (the request-header
names come from ``extension-apiserver-authentication``; see :mod:`kubevirt.service.aggregation`); what
is CDI's own is the request shape and wording:
paths of four segments or fewer (and ``/apis/<group>/<version>/version``) are open to anyone, a review is
only made for ``POST /apis/upload.cdi.kubevirt.io/<version>/namespaces/<ns>/uploadtokenrequests`` (verb
``create``), and the refusals carry CDI's reasons.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubevirt.cdi_apiserver.discovery import GROUP, RESOURCE
from kubevirt.service.aggregation.authorizer import (
    RequestAuthorizer,
    ReviewNotPossibleError,
    subject_access_review,
)
from kubevirt.service.aggregation.identity import RequestHeaderNames, header_extras, header_values
from kubevirt.service.aggregation.paths import path_segments
from kubevirt_api.view import JSON

# Only creating is served.
_VERBS = {"POST": "create"}
# The segments of /apis/<group>/<version>/namespaces/<ns>/<resource> (the first is the empty one).
_TOKEN_PATH_SEGMENTS = 7


def is_info_endpoint(segments: Sequence[str]) -> bool:
    """CDI's open paths: discovery, health, OpenAPI and ``/apis/<group>/<version>/version``."""
    return len(segments) <= 4 or segments[4] == "version"


def _required(headers: Sequence[tuple[str, str]], names: Sequence[str]) -> list[str]:
    values = header_values(headers, names)
    if values is None:
        # Go's %+v of the header names: "[X-Remote-User]".
        listed = " ".join(dict.fromkeys(names))
        raise ReviewNotPossibleError(f"one of these headers required for authorization: [{listed}]")
    return values


def token_access_review(
    path: str, method: str, headers: Sequence[tuple[str, str]], names: RequestHeaderNames
) -> JSON:
    """The SubjectAccessReview for a token request; ``path`` is the encoded path."""
    segments = path_segments(path)
    if len(segments) != _TOKEN_PATH_SEGMENTS:
        raise ReviewNotPossibleError(f"unknown api endpoint {'/'.join(segments)}")
    group, version, namespace, resource = segments[2], segments[3], segments[5], segments[6]
    if group != GROUP:
        raise ReviewNotPossibleError(f"unknown api group {group}")
    if resource != RESOURCE:
        raise ReviewNotPossibleError(f"unknown resource type {resource}")
    users = _required(headers, names.user)
    groups = _required(headers, names.group)
    verb = _VERBS.get(method.upper())
    if verb is None:
        raise ReviewNotPossibleError(f"unsupported HTTP method {method.upper()}")
    return subject_access_review(
        {
            "user": users[0],
            "groups": groups,
            "extra": header_extras(headers, names.extra_prefixes),
            "resourceAttributes": {
                "namespace": namespace,
                "verb": verb,
                "group": group,
                "version": version,
                "resource": resource,
            },
        }
    )


@dataclass
class TokenAuthorizer(RequestAuthorizer):
    """CDI's open paths and reviews on the shared decision; the shared middleware drives it."""

    def is_open(self, path: str) -> bool:
        return is_info_endpoint(path_segments(path))

    def review(self, path: str, method: str, headers: Sequence[tuple[str, str]]) -> JSON:
        return token_access_review(path, method, headers, self.names)
