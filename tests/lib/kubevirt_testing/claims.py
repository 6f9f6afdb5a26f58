"""PersistentVolumeClaims for the storage tests: one builder for the sizes, modes and sources they use."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def claim(name: str, size: str, *, block: bool = False, source: str = "", node: str = "") -> JSON:
    """A ReadWriteOnce claim of ``size``; ``source`` restores a VolumeSnapshot; ``node`` is the scheduler's
    mark once it placed the claim's first pod (WaitForFirstConsumer), for tests without a scheduler."""
    spec: JSON = {
        "accessModes": ["ReadWriteOnce"],
        "volumeMode": "Block" if block else "Filesystem",
        "resources": {"requests": {"storage": size}},
    }
    if source:
        spec["dataSource"] = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": source}
    metadata: JSON = {"name": name}
    if node:
        metadata["annotations"] = {"volume.kubernetes.io/selected-node": node}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}
