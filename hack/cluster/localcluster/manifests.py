"""Small Kubernetes objects the functional tests deploy servers with (an HTTPS server behind a Service)."""

from __future__ import annotations

import base64


def tls_secret(name: str, namespace: str, cert: bytes, key: bytes) -> dict[str, object]:
    data = {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/tls",
        "data": data,
    }


def https_container(name: str, image: str, port: int, mounts: dict[str, str]) -> dict[str, object]:
    """A container of a locally built image, ready once ``GET /healthz`` answers on ``port``;
    ``mounts`` maps volume names to mount paths (read-only)."""
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "Never",
        "ports": [{"containerPort": port, "name": "https"}],
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTPS"},
            "periodSeconds": 1,
        },
        "volumeMounts": [
            {"name": volume, "mountPath": path, "readOnly": True} for volume, path in mounts.items()
        ],
    }


def deployment(
    name: str,
    namespace: str,
    labels: dict[str, str],
    container: dict[str, object],
    volumes: list[dict[str, object]],
) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container], "volumes": volumes},
            },
        },
    }


def service(
    name: str,
    namespace: str,
    labels: dict[str, str],
    target_port: int,
    *,
    port: int = 443,
    port_name: str = "https",
) -> dict[str, object]:
    """Port ``port`` of Service ``name`` to ``target_port`` of the pods with ``labels``."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": labels, "ports": [{"port": port, "targetPort": target_port, "name": port_name}]},
    }
