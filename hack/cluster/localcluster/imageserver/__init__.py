"""The test image server: the test guests' disks over HTTP inside the cluster, so that DataVolumes importing
from an ``http`` source (in functional tests and examples) need no internet.

Its image, ``test-image-server`` (``hack/build-images test-image-server``; built only when named), is
Debian's Python with the files :mod:`.files` makes from the test guests' disks and the server of
:mod:`.server`. :func:`deploy` runs it as the Deployment and Service ``image-server`` in the namespace
``test-images``; :func:`url` names a file there.

It is also a read-only container registry: a DataVolume with a ``registry`` source of
:func:`registry_url` (:data:`REGISTRY_IMAGE`, the CirrOS-compatible guest's containerDisk) imports from it
when :data:`REGISTRY_HOST` is among CDIConfig's ``insecureRegistries``. The importer tries https first (port
443, which the Service also forwards to the server: it refuses the TLS handshake at once), then plain
http on port 80. ``python -m localcluster.imageserver`` builds and imports the image, then deploys it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import manifests
from ..handle import Cluster
from ..layout import CLUSTER_DOMAIN, IMAGE_TAG, image_name
from .files import REGISTRY_REPOSITORY

NAME = "image-server"
NAMESPACE = "test-images"
IMAGE = "test-image-server"
HOST = f"{NAME}.{NAMESPACE}.svc.{CLUSTER_DOMAIN}"
SERVICE_PORT = 80
# A registry client's https attempt on a port-less registry: answered with a TLS alert instead of left to
# time out (nothing would answer a Service port that does not exist).
TLS_REFUSAL_PORT = 443
PORT = 8080  # the container's: it runs as a user without privileges
ROOT = "/srv/images"  # the served folder in the image
SERVER_SOURCE = Path(__file__).with_name("server.py")
SERVER_PATH = "/usr/local/lib/test-image-server/server.py"
ENTRYPOINT = ["/usr/bin/python3", SERVER_PATH]
ARGS = ["--root", ROOT, "--port", str(PORT)]
HEALTH_PATH = "/healthz"  # the server's readiness answer
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "test-images"}

# The registry: its host (for CDIConfig's insecureRegistries) and the image tests import.
REGISTRY_HOST = HOST
REGISTRY_IMAGE = f"{REGISTRY_REPOSITORY}:{IMAGE_TAG}"

JSON = dict[str, Any]


def url(file: str) -> str:
    """Where pods fetch one of the server's files (:func:`.files.file_names`)."""
    return f"http://{HOST}/{file}"


def registry_url(image: str = REGISTRY_IMAGE) -> str:
    """A registry source's URL of one of the server's images (:func:`.files.registry_images`)."""
    return f"docker://{REGISTRY_HOST}/{image}"


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
    """The namespace, the server's Deployment (one replica) and its Service on port 80 (and 443, whose TLS
    handshakes the server refuses)."""
    namespace: JSON = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    deployment = manifests.deployment(NAME, NAMESPACE, LABELS, container(image or image_name(IMAGE)), [])
    service = manifests.service(NAME, NAMESPACE, LABELS, PORT, port=SERVICE_PORT, port_name="http")
    spec: Any = service["spec"]
    spec["ports"].append({"port": TLS_REFUSAL_PORT, "targetPort": PORT, "name": "tls-refusal"})
    return [namespace, deployment, service]


def deploy(cluster: Cluster, *, image: str | None = None, timeout: int = 120) -> None:
    """Applies :func:`objects` and waits until the server answers; its image must be on the nodes
    (``hack/build-images test-image-server``)."""
    cluster.apply(*objects(image))
    cluster.rollout(NAMESPACE, NAME, timeout)


def remove(cluster: Cluster) -> None:
    """Deletes the server's namespace and all in it."""
    cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true")
