"""Reading a request path as the router reads it, and refusing paths that read two ways.

The router splits the encoded path at each ``/`` and decodes every segment. A segment that decodes to
something holding a ``/`` (or to ``.`` or ``..``) could be read as one name by the router and as several
segments by anyone decoding first, so such paths are refused before any review, as are namespaces no
object can live in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import unquote

from kubevirt.admission.k8s_names import dns1123_label
from kubevirt.service.aggregation.status import StatusError, bad_request

# The segments of ``/apis/<group>/<version>/namespaces/<ns>/<resource>/<name>`` (the first is the empty
# one before the leading slash) holding the namespace, the resource and the name.
NAMESPACE_INDEX, RESOURCE_INDEX, NAME_INDEX = 5, 6, 7
_ROUTED = (("namespace", NAMESPACE_INDEX), ("name", NAME_INDEX))


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


def unambiguous(raw_path: str) -> str | None:
    """The decoded path, unless a segment decodes to more than one."""
    segments = path_segments(raw_path)
    if any(segment_problem(segment) is not None for segment in segments):
        return None
    return "/".join(segments)


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
    return impossible_namespace(segments)


def in_namespace(segments: list[str]) -> bool:
    """Whether the path is under ``/apis/<group>/<version>/namespaces/<ns>``."""
    return len(segments) > NAMESPACE_INDEX and segments[NAMESPACE_INDEX - 1] == "namespaces"


def impossible_namespace(segments: list[str]) -> StatusError | None:
    """404 for a namespace no object can live in: there is nothing to authorise."""
    if not in_namespace(segments):
        return None
    namespace = segments[NAMESPACE_INDEX]
    if dns1123_label(namespace):
        details = {"name": namespace, "kind": "namespaces"}
        return StatusError(404, "NotFound", f"namespaces {json.dumps(namespace)} not found", details)
    return None
