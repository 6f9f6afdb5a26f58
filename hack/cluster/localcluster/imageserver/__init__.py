"""The test image server: the test guests' disks over HTTP inside the cluster, so that DataVolumes importing
from an ``http`` source (in functional tests and examples) need no internet.

Its image, ``test-image-server`` (``hack/build-images test-image-server``; built only when named), is
Debian's Python with the files :mod:`.files` makes from the test guests' disks and the server of
:mod:`.server`. :func:`deploy` runs it as the Deployment and Service ``image-server`` in the namespace
``test-images``; :func:`url` names a file there. ``python -m localcluster.imageserver`` builds and imports
the image, then deploys it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import manifests
from ..handle import Cluster
from ..layout import CLUSTER_DOMAIN, image_name

NAME = "image-server"
NAMESPACE = "test-images"
IMAGE = "test-image-server"
SERVICE_PORT = 80
PORT = 8080  # the container's: it runs as a user without privileges
ROOT = "/srv/images"  # the served folder in the image
SERVER_SOURCE = Path(__file__).with_name("server.py")
SERVER_PATH = "/usr/local/lib/test-image-server/server.py"
ENTRYPOINT = ["/usr/bin/python3", SERVER_PATH]
ARGS = ["--root", ROOT, "--port", str(PORT)]
HEALTH_PATH = "/healthz"  # the server's readiness answer
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "test-images"}

JSON = dict[str, Any]


def url(file: str) -> str:
    """Where pods fetch one of the server's files (:func:`.files.file_names`)."""
    return f"http://{NAME}.{NAMESPACE}.svc.{CLUSTER_DOMAIN}/{file}"


def container(image: str) -> JSON:
    return {
        "name": NAME,
        "image": image,
        "imagePullPolicy": "Never",  # built and imported locally
        "ports": [{"containerPort": PORT, "name": "http"}],
        "readinessProbe": {"httpGet": {"path": HEALTH_PATH, "port": PORT}, "periodSeconds": 1},
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
        "securityContext": {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def objects(image: str | None = None) -> list[JSON]:
    """The namespace, the server's Deployment (one replica) and its Service on port 80."""
    namespace: JSON = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    deployment = manifests.deployment(NAME, NAMESPACE, LABELS, container(image or image_name(IMAGE)), [])
    service = manifests.service(NAME, NAMESPACE, LABELS, PORT, port=SERVICE_PORT, port_name="http")
    return [namespace, deployment, service]


def deploy(cluster: Cluster, *, image: str | None = None, timeout: int = 120) -> None:
    """Applies :func:`objects` and waits until the server answers; its image must be on the nodes
    (``hack/build-images test-image-server``)."""
    cluster.apply(*objects(image))
    cluster.rollout(NAMESPACE, NAME, timeout)


def remove(cluster: Cluster) -> None:
    """Deletes the server's namespace and all in it."""
    cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true")
