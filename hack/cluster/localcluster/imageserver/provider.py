"""A stand-in for the ``disks-images-provider`` DaemonSet of KubeVirt's own functional test setup, which
some of its specs read a guest disk from (``cat /images/alpine/disk.img`` in the container ``target`` of a
pod labelled ``kubevirt.io=disks-images-provider`` in KubeVirt's namespace, e.g. the image-upload specs).

It runs the test image server's image, which holds the Alpine-compatible guest's disk, and copies that disk to
the path the specs read. Only ``hack/kubevirt-conformance`` deploys it: it is test scaffolding for KubeVirt's
suite, never part of an installation.
"""

from __future__ import annotations

from typing import Any

from ..layout import image_name
from . import IMAGE, ROOT

NAME = "disks-images-provider"
LABELS = {"kubevirt.io": NAME}
CONTAINER = "target"
ALPINE_DISK = "/images/alpine/disk.img"
SOURCE = f"{ROOT}/test-guest-alpine-compatible.qcow2"

JSON = dict[str, Any]


def objects(namespace: str, image: str | None = None) -> list[JSON]:
    copy = f"mkdir -p /images/alpine && cp {SOURCE} {ALPINE_DISK} && exec sleep infinity"
    container: JSON = {
        "name": CONTAINER,
        "image": image or image_name(IMAGE),
        "imagePullPolicy": "Never",
        "command": ["/bin/sh", "-c", copy],
        "readinessProbe": {"exec": {"command": ["test", "-s", ALPINE_DISK]}, "periodSeconds": 1},
        "volumeMounts": [{"name": "images", "mountPath": "/images"}],
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1001, "allowPrivilegeEscalation": False},
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": NAME, "namespace": namespace, "labels": LABELS},
            "spec": {
                "selector": {"matchLabels": LABELS},
                "template": {
                    "metadata": {"labels": LABELS},
                    "spec": {"containers": [container], "volumes": [{"name": "images", "emptyDir": {}}]},
                },
            },
        }
    ]
