"""The registry node pull (``pullMethod: node``), as CDI's import controller runs it: the image itself is a
second container of the importer pod, so the node's container runtime pulls it (with the node's registry
configuration), and it serves its ``/disk`` file on localhost:8100; the importer then imports that over
HTTP like any URL. CDI copies a small Go server into the image's container from an init container; here the
importer image's static busybox is copied instead and runs its ``httpd`` (a containerDisk image holds
nothing that runs). The server writes the disk's file name to ``/shared/ready``; the importer creates
``/shared/done`` when it has finished, and the server then exits, so the pod completes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.workerpod import WorkerImage
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.cdi.constants import Annotation, ImporterEnv, ImporterExtraEnv, NodePull
from kubevirt_api.view import JSON

BUSYBOX_IN_IMAGE: Final = "/bin/busybox"  # busybox-static, in every image of the project
BUSYBOX: Final = f"{NodePull.SHARED_DIR}/busybox"
DOCKER_PREFIX: Final = "docker://"
# Serve the first file of the image's disk directory until the importer says it is done; exit with an
# error if the server dies first (the importer then fails and the pod is retried).
SERVER_SCRIPT: Final = f"""B={BUSYBOX}
name=$($B ls {NodePull.IMAGE_DIR} | $B head -n 1)
if [ -z "$name" ]; then echo "no disk image in {NodePull.IMAGE_DIR}" >&2; exit 1; fi
$B httpd -f -p 127.0.0.1:{NodePull.PORT} -h {NodePull.IMAGE_DIR} &
server=$!
$B sleep 1
echo -n "$name" > {NodePull.READY_FILE}
while [ ! -e {NodePull.DONE_FILE} ]; do
  if ! kill -0 $server 2>/dev/null; then echo "the disk server stopped" >&2; exit 1; fi
  $B sleep 1
done
kill $server
"""


def is_node_pull(pvc: Mapping[str, Any]) -> bool:
    annotations = meta.annotations_of(pvc)
    return (
        annotations.get(Annotation.IMPORT_SOURCE) == cdi.SOURCE_REGISTRY
        and annotations.get(Annotation.IMPORT_REGISTRY_METHOD) == cdi.REGISTRY_PULL_NODE
    )


def image_of(endpoint: str) -> str:
    """The image reference of a ``docker://`` registry URL."""
    return endpoint.removeprefix(DOCKER_PREFIX)


def environment() -> dict[str, str]:
    """What the importer's environment says instead of the registry source's."""
    return {
        ImporterEnv.SOURCE: cdi.SOURCE_HTTP,
        ImporterEnv.ENDPOINT: NodePull.ENDPOINT,
        ImporterEnv.PULL_METHOD: cdi.REGISTRY_PULL_NODE,
        ImporterExtraEnv.READY_FILE: NodePull.READY_FILE,
        ImporterExtraEnv.DONE_FILE: NodePull.DONE_FILE,
        ImporterEnv.INSECURE_TLS: "false",
    }


def shared_mount() -> JSON:
    return {"name": NodePull.SHARED_VOLUME, "mountPath": NodePull.SHARED_DIR}


def shared_volume() -> JSON:
    return {"name": NodePull.SHARED_VOLUME, "emptyDir": {}}


def init_container(settings: WorkerImage) -> JSON:
    return {
        "name": NodePull.INIT_CONTAINER,
        "image": settings.image,
        "imagePullPolicy": settings.pull_policy,
        "command": ["cp", BUSYBOX_IN_IMAGE, BUSYBOX],
        "volumeMounts": [shared_mount()],
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def server_container(pvc: Mapping[str, Any], settings: WorkerImage) -> JSON:
    endpoint = meta.annotations_of(pvc).get(Annotation.IMPORT_ENDPOINT, "")
    return {
        "name": NodePull.SERVER_CONTAINER,
        "image": image_of(endpoint),
        "imagePullPolicy": settings.pull_policy,
        "command": [BUSYBOX, "sh", "-c", SERVER_SCRIPT],
        "volumeMounts": [shared_mount()],
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
