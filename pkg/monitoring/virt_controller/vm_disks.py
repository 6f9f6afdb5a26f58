"""``kubevirt_vm_disk_allocated_size_bytes``: the size of each PVC-backed disk of a VM, from the VM's
DataVolume template when the disk is one of its DataVolumes, else from the PVC's storage request."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import suppress
from typing import Any, Final

from kubevirt.monitoring.virt_controller.families import GAUGE, Description, Sample
from kubevirt.monitoring.virt_controller.objects import quantity, view_of
from kubevirt_api.resource import Quantity
from kubevirt_api.view import FieldError, View

__all__ = ["DISK_ALLOCATED", "DISK_ALLOCATED_LABELS", "disk_samples", "pvcs_by_key"]

DISK_ALLOCATED: Final = Description(
    "kubevirt_vm_disk_allocated_size_bytes",
    GAUGE,
    "Allocated disk size of a Virtual Machine in bytes, based on its PersistentVolumeClaim. "
    "Includes persistentvolumeclaim (PVC name), volume_mode (disk presentation mode: Filesystem or Block), "
    "and device (disk name).",
)
DISK_ALLOCATED_LABELS: Final = ("name", "namespace", "persistentvolumeclaim", "volume_mode", "device")

PVCs = Mapping[tuple[str, str], View]


def pvcs_by_key(pvcs: Iterable[Any]) -> dict[tuple[str, str], View]:
    """The cached PVCs by (namespace, name)."""
    found: dict[tuple[str, str], View] = {}
    for pvc in pvcs:
        with suppress(FieldError):  # a malformed PVC sizes no disk
            view = view_of(pvc)
            meta = view.object("metadata")
            found[(meta.string("namespace"), meta.string("name"))] = view
    return found


def _storage_request(spec: View) -> Quantity:
    return quantity(spec.object("resources").object("requests").get("storage")) or Quantity.from_int(0)


def _template_size(vm_spec: View, data_volume: str) -> Quantity | None:
    for template in vm_spec.items("dataVolumeTemplates"):
        if template.object("metadata").string("name") != data_volume:
            continue
        spec = template.object("spec")
        for key in ("pvc", "storage"):
            claim = spec.optional_object(key)
            if claim is not None:
                return _storage_request(claim)
    return None


def disk_samples(name: str, namespace: str, vm_spec: View, pvcs: PVCs) -> list[Sample]:
    template = vm_spec.optional_object("template")
    if template is None:
        return []
    samples: list[Sample] = []
    for volume in template.object("spec").items("volumes"):
        claim = volume.optional_object("persistentVolumeClaim")
        data_volume = volume.optional_object("dataVolume")
        if claim is not None:
            pvc_name, from_template = claim.string("claimName"), False
        elif data_volume is not None:
            pvc_name, from_template = data_volume.string("name"), True
        else:
            continue
        pvc = pvcs.get((namespace, pvc_name)) if pvc_name else None
        if pvc is None:
            continue
        size = _template_size(vm_spec, pvc_name) if from_template else None
        if size is None:
            size = _storage_request(pvc.object("spec"))
        mode = pvc.object("spec").string("volumeMode")
        labels = (name, namespace, pvc_name, mode, volume.string("name"))
        samples.append((DISK_ALLOCATED, labels, float(size.value())))
    return samples
