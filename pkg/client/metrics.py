"""KubeVirt's REST client metrics, labelled as KubeVirt labels them.

``kubevirt_rest_client_requests_total`` counts every HTTP round trip (each try of a retried request, and
watches once their answer arrives); ``resource`` and ``verb`` are read from the request's path and method,
``none`` where the path names no resource. The latency histogram times each API call as a whole (tries
and body included, watches not), under client-go's template of its URL: scheme and host kept, names and
namespaces replaced by ``{name}``/``{namespace}``, query values by ``{value}``, escaped as Go writes URLs.
The rate limiter histogram is registered but never observed: this client has no client-side rate limiter.

Also home of what the project's prometheus_client metrics share to look like Go's client: bucket bounds
computed as Go computes them, ``le`` written as Go writes it, and no ``_created`` series.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

import prometheus_client
from prometheus_client import Counter, Histogram
from prometheus_client.samples import Sample

__all__ = [
    "GoHistogram",
    "count_request",
    "exponential_buckets",
    "metric_descriptions",
    "observe_request_latency",
]

# KubeVirt's components (all Go) expose no `_created` series. The switch is read at scrape time and is
# process-wide: set here, where the project's prometheus_client counters and histograms are defined.
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Go's exponential bucket bounds: multiplied in turn, so they are Go's very floats
    (``9.999999999999999e-06`` rather than ``1e-05`` among them)."""
    bounds = []
    for _ in range(count):
        bounds.append(start)
        start *= factor
    return tuple(bounds)


class GoHistogram(Histogram):
    """A Histogram whose ``le`` labels read as Go's client writes them: ``1``, not ``1.0``."""

    def _child_samples(self) -> Iterable[Sample]:
        return tuple(map(_go_bound, super()._child_samples()))


def _go_bound(sample: Sample) -> Sample:
    bound = sample.labels.get("le")
    if bound is None or not bound.endswith(".0"):
        return sample
    return sample._replace(labels={**sample.labels, "le": bound.removesuffix(".0")})


_REQUESTS_DESCRIPTION: Final = (
    "kubevirt_rest_client_requests_total",
    "Counter",
    "Number of HTTP requests, partitioned by status code, method, and host.",
)
_LATENCY_DESCRIPTION: Final = (
    "kubevirt_rest_client_request_latency_seconds",
    "Histogram",
    "Request latency in seconds. Broken down by verb and URL.",
)
_RATE_LIMITER_DESCRIPTION: Final = (
    "kubevirt_rest_client_rate_limiter_duration_seconds",
    "Histogram",
    "Client side rate limiter latency in seconds. Broken down by verb and URL.",
)

# KubeVirt's latency buckets (those of the API server's request durations).
_LATENCY_BUCKETS: Final = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0,
    4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)  # fmt: skip

_REQUESTS = Counter(
    _REQUESTS_DESCRIPTION[0], _REQUESTS_DESCRIPTION[2], ["code", "method", "host", "resource", "verb"]
)
_LATENCY = GoHistogram(
    _LATENCY_DESCRIPTION[0], _LATENCY_DESCRIPTION[2], ["verb", "url"], buckets=_LATENCY_BUCKETS
)
_RATE_LIMITER = GoHistogram(
    _RATE_LIMITER_DESCRIPTION[0],
    _RATE_LIMITER_DESCRIPTION[2],
    ["verb", "url"],
    buckets=exponential_buckets(0.001, 2, 10),
)


def metric_descriptions() -> list[tuple[str, str, str]]:
    """The REST client's families as exposed, as (name, type, help)."""
    return [_REQUESTS_DESCRIPTION, _LATENCY_DESCRIPTION, _RATE_LIMITER_DESCRIPTION]


def count_request(method: str, url: str, status: int | None) -> None:
    """One HTTP round trip to ``url``, answered with ``status``, or with None failed without an answer."""
    parts = urlsplit(url)
    path = unquote(parts.path)  # Go matches the decoded path
    resource = _resource(path) if method else ""
    verb = _verb(method, path, _watch_parameter(parts.query)) if resource else _NONE
    host = parts.netloc.rpartition("@")[2]
    code = "<error>" if status is None else str(status)
    _REQUESTS.labels(code, method, host, resource or _NONE, verb).inc()


def observe_request_latency(
    method: str, base: str, path: str, query_keys: Iterable[str], seconds: float
) -> None:
    """One API call's total time; ``base`` is the server's URL, ``path`` the API path below it, and only
    the query's keys matter (their values are templated away)."""
    url, templated_path = _url_template(base, unquote(path), query_keys)
    # The template's query values are never "true", so only a /watch/ path makes a GET a WATCH here.
    _LATENCY.labels(_verb(method, templated_path, ""), url).observe(seconds)


_NONE: Final = "none"
_SEGMENT: Final = r"[A-Za-z0-9.\-]*"
# KubeVirt's patterns, tried in this order: watches, namespaced, then cluster-scoped paths; unanchored.
_RESOURCE_PATTERNS: Final = tuple(
    re.compile(pattern.format(s=_SEGMENT))
    for pattern in (
        r"/api/{s}/watch/namespaces/{s}/({s})",
        r"/api/{s}/watch/({s})",
        r"/apis/{s}/{s}/watch/namespaces/{s}/({s})",
        r"/apis/{s}/{s}/watch/({s})",
        r"/api/{s}/namespaces/{s}/({s})",
        r"/apis/{s}/{s}/namespaces/{s}/({s})",
        r"/api/{s}/({s})",
        r"/apis/{s}/{s}/({s})",
    )
)
_WRITE_VERBS: Final = {"PUT": "UPDATE", "PATCH": "PATCH", "POST": "CREATE", "DELETE": "DELETE"}


def _resource(path: str) -> str:
    """The first pattern that matches decides, even when what it captures is empty."""
    for pattern in _RESOURCE_PATTERNS:
        match = pattern.search(path)
        if match is not None:
            return match.group(1)
    return ""


def _verb(method: str, path: str, watch: str) -> str:
    """KubeVirt's verb: a GET is a WATCH, LIST or GET by its path, writes are renamed, others kept."""
    if method != "GET":
        return _WRITE_VERBS.get(method, method)
    if "/watch/" in path or watch == "true":
        return "WATCH"
    resource = _resource(path)
    if not resource:
        return _NONE
    return "LIST" if path.endswith(resource) else "GET"


def _watch_parameter(query: str) -> str:
    return next((value for key, value in parse_qsl(query, keep_blank_values=True) if key == "watch"), "")


# What Go leaves unescaped in a URL's path besides letters, digits and "-_.~".
_GO_PATH_SAFE: Final = "$&+,/:;=@"
_NAME_LAST: Final = frozenset({"finalize", "status"})


def _url_template(base: str, path: str, query_keys: Iterable[str]) -> tuple[str, str]:
    """client-go's URL template of a request, as written, and its path as matched (unescaped)."""
    scheme, netloc, base_path, _, _ = urlsplit(base)
    prefix = base_path.rstrip("/") + "/"  # client-go's base path always ends in a slash
    full = _go_join(prefix, path)
    query = "&".join(f"{quote_plus(key)}=%7Bvalue%7D" for key in sorted(set(query_keys)))
    if prefix in full:
        relative = full.removeprefix(prefix)
        segments = (relative if relative.startswith("/") else "/" + relative).split("/")
        group, trimmed = 1, prefix
    else:
        segments, group, trimmed = full.split("/"), 0, ""
    if len(segments) <= 2:
        return _go_url(scheme, netloc, full, query), full
    if segments[group] == "api":
        index = group + 2
    elif segments[group] == "apis":
        index = group + 3
    else:  # neither API root: the path is not shown at all
        return _go_url(scheme, netloc, "/{prefix}", ""), "/{prefix}"
    below = len(segments) - index  # the resource and what follows it
    if below == 2:
        segments[index + 1] = "{name}"
    elif below == 3:
        segments[index + 1] = "{name}" if segments[index + 2] in _NAME_LAST else "{namespace}"
    elif below >= 4:
        segments[index + 1] = "{namespace}"
        if segments[index + 3] not in _NAME_LAST:
            segments[index + 3] = "{name}"
    templated = _go_join(trimmed, _go_join(*segments))
    return _go_url(scheme, netloc, templated, query), templated


def _go_join(*parts: str) -> str:
    """Go's path.Join: the non-empty parts joined by slashes, then cleaned."""
    joined = "/".join(part for part in parts if part)
    if not joined:
        return ""
    cleaned = posixpath.normpath(joined)
    return cleaned[1:] if cleaned.startswith("//") else cleaned  # POSIX keeps "//", Go does not


def _go_url(scheme: str, netloc: str, path: str, query: str) -> str:
    if path and not path.startswith("/"):
        path = "/" + path
    url = f"{scheme}://{netloc}{quote(path, safe=_GO_PATH_SAFE)}"
    return f"{url}?{query}" if query else url
