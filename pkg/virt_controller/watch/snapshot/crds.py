"""Informers for the CSI snapshot kinds, started once their CRDs exist.

A cluster may have no snapshot CRDs (then nothing can be snapshotted, and VMs say so), or get them
later: virt-controller watches the CRDs, as KubeVirt does, and starts each informer when its CRD serves
``v1``, instead of failing to list a kind the API server does not know.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kubevirt.client.resources import VOLUME_SNAPSHOT_CLASSES, VOLUME_SNAPSHOTS, Resource
from kubevirt.controller import Informer, SharedInformerFactory, Store
from kubevirt.log import get_logger
from kubevirt_api.view import JSON

Connect = Callable[[Informer[JSON]], None]


def crd_name(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}"


class SnapshotCrdInformers:
    """Starts the VolumeSnapshot and VolumeSnapshotClass informers once their CRDs are served."""

    def __init__(self, factory: SharedInformerFactory) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._informers: dict[str, Informer[JSON]] = {}
        self._connect: dict[str, list[Connect]] = {
            crd_name(VOLUME_SNAPSHOTS): [],
            crd_name(VOLUME_SNAPSHOT_CLASSES): [],
        }
        self._resources = {
            crd_name(VOLUME_SNAPSHOTS): VOLUME_SNAPSHOTS,
            crd_name(VOLUME_SNAPSHOT_CLASSES): VOLUME_SNAPSHOT_CLASSES,
        }

    def on_volume_snapshots(self, connect: Connect) -> None:
        """``connect`` is called with the VolumeSnapshot informer when it starts (handlers go there)."""
        self._connect[crd_name(VOLUME_SNAPSHOTS)].append(connect)

    def on_volume_snapshot_classes(self, connect: Connect) -> None:
        self._connect[crd_name(VOLUME_SNAPSHOT_CLASSES)].append(connect)

    def volume_snapshots(self) -> Store[JSON] | None:
        return self._store(crd_name(VOLUME_SNAPSHOTS))

    def volume_snapshot_classes(self) -> Store[JSON] | None:
        return self._store(crd_name(VOLUME_SNAPSHOT_CLASSES))

    def _store(self, name: str) -> Store[JSON] | None:
        with self._lock:
            informer = self._informers.get(name)
        return informer.store if informer is not None else None

    def on_crd_add(self, crd: JSON) -> None:
        self._maybe_start(crd)

    def on_crd_update(self, old: JSON, new: JSON) -> None:
        self._maybe_start(new)

    def on_crd_delete(self, crd: Any) -> None:
        pass  # an informer of a kind that went away just stops seeing objects

    def _maybe_start(self, crd: JSON) -> None:
        name = (crd.get("metadata") or {}).get("name") or ""
        resource = self._resources.get(name)
        if resource is None or not _serves(crd, resource.version):
            return
        with self._lock:
            if name in self._informers:
                return
            informer = self._factory.informer(resource)
            self._informers[name] = informer
        get_logger().info("the CSI snapshot kind is served: watching it", crd=name)
        for connect in self._connect[name]:
            connect(informer)


def _serves(crd: JSON, version: str) -> bool:
    versions = (crd.get("spec") or {}).get("versions") or ()
    return any(entry.get("name") == version and entry.get("served") for entry in versions)
