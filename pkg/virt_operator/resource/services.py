"""The Services in front of KubeVirt's components (KubeVirt's ``components/deployments.go``)."""

from __future__ import annotations

from kubevirt_api.core.v1.constants import APP_LABEL
from kubevirt_api.view import JSON

VIRT_API_SERVICE = "virt-api"
EXPORTPROXY_SERVICE = "virt-exportproxy"
PROMETHEUS_SERVICE = "kubevirt-prometheus-metrics"
PROMETHEUS_LABEL = "prometheus.kubevirt.io"
METRICS_PORT_NAME = "metrics"  # what the metrics Service targets in every component's pod


def metrics_container_port() -> JSON:
    """The container port each component serves ``/metrics`` on (the Service's ``metrics`` target)."""
    return {"name": METRICS_PORT_NAME, "protocol": "TCP", "containerPort": 8443}


def _service(name: str, namespace: str, labels: dict[str, str], selector: dict[str, str], port: JSON) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"selector": selector, "ports": [port], "type": "ClusterIP", "sessionAffinity": "None"},
    }


def services(namespace: str) -> list[JSON]:
    """virt-api's, virt-exportproxy's (there whatever the VMExport gate says, as in KubeVirt) and the
    metrics Service."""
    https = {"port": 443, "targetPort": 8443, "protocol": "TCP"}
    return [
        _service(
            VIRT_API_SERVICE,
            namespace,
            {APP_LABEL: VIRT_API_SERVICE},
            {APP_LABEL: VIRT_API_SERVICE},
            https,
        ),
        _service(
            EXPORTPROXY_SERVICE,
            namespace,
            {APP_LABEL: EXPORTPROXY_SERVICE},
            {APP_LABEL: EXPORTPROXY_SERVICE},
            https,
        ),
        _service(
            PROMETHEUS_SERVICE,
            namespace,
            {APP_LABEL: "", PROMETHEUS_LABEL: "true"},
            {PROMETHEUS_LABEL: "true"},
            {**https, "name": "metrics", "targetPort": METRICS_PORT_NAME},
        ),
    ]
