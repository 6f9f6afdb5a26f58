"""Informers for the CSI snapshot kinds, started once their CRDs exist.

A cluster may have no snapshot CRDs (then nothing can be snapshotted, and VMs say so), or get them
later: virt-controller watches the CRDs, as KubeVirt does, and starts each informer when its CRD serves
``v1`` (see :mod:`..crdinformers`).
"""

from __future__ import annotations

from kubevirt.client.resources import VOLUME_SNAPSHOT_CLASSES, VOLUME_SNAPSHOTS
from kubevirt.controller import SharedInformerFactory, Store
from kubevirt.virt_controller.watch.crdinformers import Connect, CrdGatedInformers, crd_name
from kubevirt_api.view import JSON

__all__ = ["SnapshotCrdInformers", "crd_name"]


class SnapshotCrdInformers(CrdGatedInformers):
    """Starts the VolumeSnapshot and VolumeSnapshotClass informers once their CRDs are served."""

    def __init__(self, factory: SharedInformerFactory) -> None:
        super().__init__(factory, (VOLUME_SNAPSHOTS, VOLUME_SNAPSHOT_CLASSES))

    def on_volume_snapshots(self, connect: Connect) -> None:
        """``connect`` is called with the VolumeSnapshot informer when it starts (handlers go there)."""
        self.on_started(VOLUME_SNAPSHOTS, connect)

    def on_volume_snapshot_classes(self, connect: Connect) -> None:
        self.on_started(VOLUME_SNAPSHOT_CLASSES, connect)

    def volume_snapshots(self) -> Store[JSON] | None:
        return self.store(VOLUME_SNAPSHOTS)

    def volume_snapshot_classes(self) -> Store[JSON] | None:
        return self.store(VOLUME_SNAPSHOT_CLASSES)
