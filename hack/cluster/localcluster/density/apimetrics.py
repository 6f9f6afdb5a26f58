"""The apiserver's own request counters (``apiserver_request_total``), read before and after a run."""

from __future__ import annotations

import re
from collections import Counter

from ..handle import Cluster

METRIC = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>[0-9.e+]+)$")
LABEL = re.compile(r'(\w+)="([^"]*)"')

Requests = Counter[tuple[str, str]]


def parse(text: str, *, failed: bool = False) -> Requests:
    """``apiserver_request_total`` of a /metrics page summed by (verb, resource[/subresource]); with
    ``failed``, only the requests answered with an error, keyed (verb, "resource code")."""
    counts: Requests = Counter()
    for line in text.splitlines():
        match = METRIC.match(line)
        if not match:
            continue
        labels = dict(LABEL.findall(match["labels"]))
        resource = labels.get("resource", "")
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        code = labels.get("code", "")
        if failed:
            if not code.isdigit() or int(code) < 400:
                continue
            resource += f" {code}"
        counts[(labels.get("verb", ""), resource)] += int(float(match["value"]))
    return counts


def read(cluster: Cluster) -> str:
    return cluster.kubectl("get", "--raw", "/metrics").stdout


def request_counts(cluster: Cluster) -> Requests:
    return parse(read(cluster))


def per_object(before: Requests, after: Requests, own: Requests, objects: int) -> dict[str, float]:
    """The requests made between two readings, less the caller's ``own``, per object started, keyed
    ``"VERB resource"``."""
    made = after - before
    made.subtract(own)
    return {
        f"{verb} {resource or '(non-resource)'}": round(n / objects, 2)
        for (verb, resource), n in sorted(made.items())
        if n > 0
    }
