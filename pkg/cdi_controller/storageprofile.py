"""The StorageProfile controller: one StorageProfile per StorageClass, same name, whose status tells the
DataVolume controller which access and volume modes a claim of that class gets when its DataVolume names
none (``claimPropertySets``: the profile's spec, else a table of known provisioners)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from typing import Any

from kubevirt.cdi.resources import STORAGE_PROFILES
from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.render import recommended_labels
from kubevirt.client import KubeApi
from kubevirt.client.errors import NotFoundError
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.view import JSON

RWO, ROX, RWX = "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"
FILE, BLOCK = meta.FILESYSTEM, meta.BLOCK
# The local cluster's CSI driver: node-local ReadWriteOnce and shared ReadWriteMany volumes, either mode.
LOCAL_CSI_PROVISIONER = "hostpath.csi.kubevirt-py.io"
_RBD = [(RWX, BLOCK), (RWO, BLOCK), (RWO, FILE)]
_RWO_BOTH = [(RWO, BLOCK), (RWO, FILE)]
# What CDI knows of common provisioners (pkg/storagecapabilities), keyed by provisioner name; the first
# entry is what a DataVolume naming no mode gets.
CAPABILITIES: dict[str, list[tuple[str, str]]] = {
    LOCAL_CSI_PROVISIONER: [(RWO, FILE), (RWX, FILE), (RWO, BLOCK), (RWX, BLOCK)],
    "kubevirt.io.hostpath-provisioner": [(RWO, FILE)],
    "kubevirt.io/hostpath-provisioner": [(RWO, FILE)],
    "k8s.io/minikube-hostpath": [(RWO, FILE)],
    "nfs.csi.k8s.io": [(RWX, FILE)],
    "k8s-sigs.io/nfs-subdir-external-provisioner": [(RWX, FILE)],
    "kubernetes.io/rbd": _RBD,
    "rbd.csi.ceph.com": _RBD,
    "rook-ceph.rbd.csi.ceph.com": _RBD,
    "openshift-storage.rbd.csi.ceph.com": _RBD,
    "cephfs.csi.ceph.com": [(RWX, FILE), (RWO, FILE)],
    "rook-ceph.cephfs.csi.ceph.com": [(RWX, FILE), (RWO, FILE)],
    "openshift-storage.cephfs.csi.ceph.com": [(RWX, FILE), (RWO, FILE)],
    "kubernetes.io/aws-ebs": [(RWO, BLOCK)],
    "efs.csi.aws.com": [(RWX, FILE), (RWO, FILE)],
    "kubernetes.io/azure-disk": [(RWO, BLOCK)],
    "disk.csi.azure.com": [(RWO, BLOCK)],
    "kubernetes.io/azure-file": [(RWX, FILE)],
    "file.csi.azure.com": [(RWX, FILE)],
    "kubernetes.io/gce-pd": [(RWO, BLOCK)],
    "topolvm.cybozu.com": _RWO_BOTH,
    "topolvm.io": _RWO_BOTH,
    "cinder.csi.openstack.org": _RWO_BOTH,
    "manila.csi.openstack.org": [(RWX, FILE)],
    "csi.ovirt.org": _RWO_BOTH,
    "kubesan.gitlab.io": [(RWX, BLOCK), (ROX, BLOCK), (RWO, BLOCK), (RWO, FILE)],
}
# Provisioners for which CDI advises a clone strategy other than the default.
CLONE_STRATEGIES = {
    "rbd.csi.ceph.com": "csi-clone",
    "rook-ceph.rbd.csi.ceph.com": "csi-clone",
    "openshift-storage.rbd.csi.ceph.com": "csi-clone",
    "cephfs.csi.ceph.com": "csi-clone",
    "rook-ceph.cephfs.csi.ceph.com": "csi-clone",
    "openshift-storage.cephfs.csi.ceph.com": "csi-clone",
    "topolvm.cybozu.com": "copy",
    "topolvm.io": "copy",
    "kubesan.gitlab.io": "csi-clone",
}
SNAPSHOT_SOURCE_FORMAT = {"rook-ceph.rbd.csi.ceph.com", "openshift-storage.rbd.csi.ceph.com"}
CLONE_STRATEGY_ANNOTATION = "cdi.kubevirt.io/clone-strategy"
DEFAULT_SNAPSHOT_CLASS = "snapshot.storage.kubernetes.io/is-default-class"


class InvalidClaimPropertySetError(ValueError):
    pass


def claim_property_sets(provisioner: str) -> list[JSON]:
    return [
        {"accessModes": [access], "volumeMode": mode} for access, mode in CAPABILITIES.get(provisioner, [])
    ]


class StorageProfileController:
    def __init__(self, *, api: KubeApi, caches: Caches) -> None:
        self._api = api
        self._caches = caches

    def reconcile(self, key: str) -> None:
        """``key``: a StorageClass's name, which is its profile's."""
        storage_class = self._caches.storage_classes.get_by_key(key)
        profile = self._caches.storage_profile(key)
        if storage_class is None or meta.deleting(storage_class):
            if profile is not None:
                with contextlib.suppress(NotFoundError):
                    self._api.delete(STORAGE_PROFILES, None, key)
            return
        desired = self.desired(storage_class, profile)
        if profile is None:
            self._api.create(STORAGE_PROFILES, None, desired)
        elif desired != profile:
            self._api.update(STORAGE_PROFILES, None, desired)

    def desired(self, storage_class: Mapping[str, Any], profile: Mapping[str, Any] | None) -> JSON:
        name = meta.name(storage_class)
        provisioner = str(storage_class.get("provisioner") or "")
        result: JSON = copy.deepcopy(dict(profile)) if profile is not None else _empty_profile(name)
        result.setdefault("metadata", {}).setdefault("labels", {}).update(recommended_labels())
        spec = result.get("spec") or {}
        status: JSON = result.setdefault("status", {})
        status["storageClass"] = name
        status["provisioner"] = provisioner
        snapshot_class = self._snapshot_class(provisioner, spec.get("snapshotClass"))
        if snapshot_class:
            status["snapshotClass"] = snapshot_class
        else:
            status.pop("snapshotClass", None)
        status["cloneStrategy"] = _clone_strategy(storage_class, spec.get("cloneStrategy"), snapshot_class)
        status["dataImportCronSourceFormat"] = spec.get("dataImportCronSourceFormat") or (
            "snapshot" if provisioner in SNAPSHOT_SOURCE_FORMAT and snapshot_class else "pvc"
        )
        wanted = spec.get("claimPropertySets") or []
        for index, cps in enumerate(wanted):
            if not cps.get("volumeMode") or not cps.get("accessModes"):
                raise InvalidClaimPropertySetError(
                    f"spec.claimPropertySets[{index}]: each ClaimPropertySet must provide both volume mode "
                    "and access modes"
                )
        status["claimPropertySets"] = copy.deepcopy(wanted) if wanted else claim_property_sets(provisioner)
        return result

    def _snapshot_class(self, provisioner: str, wanted: Any) -> str | None:
        """The VolumeSnapshotClass of the provisioner's driver: the one the spec names, else the default
        one, else the first by name."""
        candidates = sorted(
            (vsc for vsc in self._caches.volume_snapshot_classes.list() if vsc.get("driver") == provisioner),
            key=meta.name,
        )
        if not candidates:
            return None
        if wanted:
            return next((meta.name(v) for v in candidates if meta.name(v) == wanted), None)
        defaults = [v for v in candidates if meta.annotations_of(v).get(DEFAULT_SNAPSHOT_CLASS) == "true"]
        return meta.name((defaults or candidates)[0])


def _clone_strategy(storage_class: Mapping[str, Any], wanted: Any, snapshot_class: str | None) -> str:
    if wanted:
        return str(wanted)
    annotated = meta.annotations_of(storage_class).get(CLONE_STRATEGY_ANNOTATION)
    if annotated is not None:
        return {"copy": "copy", "snapshot": "snapshot", "csi-clone": "csi-clone"}.get(annotated, "")
    strategy = "snapshot" if snapshot_class else "copy"
    strategy = CLONE_STRATEGIES.get(str(storage_class.get("provisioner") or ""), strategy)
    if strategy == "snapshot" and not snapshot_class:
        return "copy"
    return strategy


def _empty_profile(name: str) -> JSON:
    return {
        "apiVersion": cdi.API_VERSION,
        "kind": "StorageProfile",
        "metadata": {"name": name, "labels": recommended_labels()},
        "spec": {},
    }
