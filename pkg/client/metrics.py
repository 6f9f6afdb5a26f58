"""The REST client's request counter under KubeVirt's name (``kubevirt_rest_client_requests_total``)."""

from __future__ import annotations

from prometheus_client import Counter

__all__ = ["REQUESTS"]

REQUESTS = Counter(
    "kubevirt_rest_client_requests_total",
    "HTTP requests to the Kubernetes API, by status code, method and host",
    ["code", "method", "host"],
)
