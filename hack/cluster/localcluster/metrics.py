"""Reading KubeVirt's components' ``/metrics`` on the local cluster, through the API server's pod proxy
(the components serve HTTPS on 8443 with their own certificates; the proxy does not check them)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from localcluster.handle import Cluster

METRICS_PORT = 8443
KUBEVIRT_NAMESPACE = "kubevirt"


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class Scrape:
    """One component pod's samples, and how long the scrape took."""

    pod: str
    samples: list[Sample]
    seconds: float

    def values(self, metric: str, /, **labels: str) -> list[float]:
        """The values of ``metric``'s samples whose labels include ``labels`` (``name`` among them)."""
        return [
            s.value
            for s in self.samples
            if s.name == metric and all(s.labels.get(key) == value for key, value in labels.items())
        ]


def component_pods(cluster: Cluster, component: str, node: str | None = None) -> list[str]:
    """The running pods of ``component`` (``virt-handler``, ``virt-api``…), on ``node`` if given."""
    pods = cluster.kubectl_json("get", "pods", "-n", KUBEVIRT_NAMESPACE, "-l", f"kubevirt.io={component}")
    items = pods.get("items") or []
    assert isinstance(items, list)
    return [
        pod["metadata"]["name"]
        for pod in items
        if (pod.get("status") or {}).get("phase") == "Running"
        and (node is None or (pod.get("spec") or {}).get("nodeName") == node)
    ]


def scrape(cluster: Cluster, pod: str, namespace: str = KUBEVIRT_NAMESPACE) -> Scrape:
    path = f"/api/v1/namespaces/{namespace}/pods/https:{pod}:{METRICS_PORT}/proxy/metrics"
    started = time.monotonic()
    text = cluster.kubectl("get", "--raw", path).stdout
    seconds = time.monotonic() - started
    samples = [
        Sample(sample.name, dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]
    return Scrape(pod, samples, seconds)


def scrape_component(cluster: Cluster, component: str, node: str | None = None) -> Scrape:
    """Every pod of ``component`` scraped, their samples together (a controller's standby replicas
    expose empty caches, the leader the cluster's figures)."""
    scrapes = [scrape(cluster, pod) for pod in component_pods(cluster, component, node)]
    if not scrapes:
        raise AssertionError(f"no running {component} pod" + (f" on {node}" if node else ""))
    return Scrape(
        ",".join(s.pod for s in scrapes),
        [sample for s in scrapes for sample in s.samples],
        max(s.seconds for s in scrapes),
    )
