"""Exporting a VirtualMachine's claims (``spec.source``: kind VirtualMachine, apiGroup kubevirt.io).

Every claim the VM's volumes name (claims, DataVolumes, memory dumps, and the backend-storage claim of a
persistent TPM or EFI) is served once all are populated and the VM does not run; a running VM makes the
export wait (``InUse``). A VM without claims, or that does not exist, is skipped (``VMNoVolumes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubevirt.controller import Store, key_for
from kubevirt.controller.store import LABEL_INDEX_PREFIX
from kubevirt.virt_controller.watch.clone.spec import template_needs_backend_storage
from kubevirt.virt_controller.watch.common import parse_time
from kubevirt.virt_controller.watch.snapshot.restore_spec import BACKEND_STORAGE_LABEL, volumes_of
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance
from kubevirt_api.view import JSON

from .pvc_source import source_name
from .volumes import DataVolumeLookup, SourceVolumes, is_populated

_FINISHED_PHASES = ("Succeeded", "Failed")


def claim_of_volume(volume: Mapping[str, Any]) -> str:
    """``PVCNameFromVirtVolume``: the claim a DataVolume, claim or memory-dump volume uses."""
    for source, field in (
        ("dataVolume", "name"),
        ("persistentVolumeClaim", "claimName"),
        ("memoryDump", "claimName"),
    ):
        if volume.get(source) is not None:
            return str(volume[source].get(field) or "")
    return ""


def backend_claim(pvcs: Store[JSON], namespace: str, vm_name: str) -> str | None:
    """The newest claim holding the VM's persistent TPM/EFI state that is not being deleted; None when
    there is none (yet)."""
    candidates = [
        pvc
        for pvc in pvcs.by_index(LABEL_INDEX_PREFIX + BACKEND_STORAGE_LABEL, vm_name)
        if pvc["metadata"].get("namespace") == namespace and not pvc["metadata"].get("deletionTimestamp")
    ]
    if not candidates:
        return None
    newest = max(
        candidates,
        key=lambda pvc: parse_time(pvc["metadata"].get("creationTimestamp") or "1970-01-01T00:00:00Z"),
    )
    return str(newest["metadata"]["name"])


def vm_claims(
    vm: Mapping[str, Any], pvcs: Store[JSON], data_volumes: DataVolumeLookup
) -> tuple[list[JSON], bool]:
    """The VM's existing claims and whether all its volumes' claims exist and are populated."""
    namespace = str(vm["metadata"].get("namespace") or "")
    # (claim, whether a DataVolume makes it) per volume.
    wanted = [(claim_of_volume(volume), volume.get("dataVolume") is not None) for volume in volumes_of(vm)]
    if template_needs_backend_storage(vm):
        backend = backend_claim(pvcs, namespace, str(vm["metadata"]["name"]))
        if backend is None:
            return [], False  # the backend claim should exist: wait for it
        wanted.append((backend, False))
    found: list[JSON] = []
    all_populated = True
    for name, from_data_volume in wanted:
        pvc = pvcs.get_by_key(key_for(namespace, name)) if name else None
        if pvc is not None:
            found.append(pvc)
            all_populated = is_populated(pvc, data_volumes) and all_populated
        elif from_data_volume:
            all_populated = False  # CDI has not made the DataVolume's claim yet
    return found, all_populated


def vm_source_volumes(
    export: Mapping[str, Any],
    vms: Store[VirtualMachine],
    vmis: Store[VirtualMachineInstance],
    pvcs: Store[JSON],
    data_volumes: DataVolumeLookup,
) -> SourceVolumes:
    namespace = str(export["metadata"].get("namespace") or "")
    name = source_name(export)
    vm = vms.get_by_key(key_for(namespace, name))
    claims, all_populated = vm_claims(vm.to_dict(), pvcs, data_volumes) if vm is not None else ([], False)
    if claims and not all_populated:
        message = f"Not all volumes in the Virtual Machine {namespace}/{name} are populated"
        return SourceVolumes(claims, message=message)
    vmi = vmis.get_by_key(key_for(namespace, name))
    running = vmi is not None and (vmi.status.phase if vmi.status else None) not in _FINISHED_PHASES
    message = f"Virtual Machine {namespace}/{name} is running" if running else ""
    return SourceVolumes(claims, in_use=running, populated=all_populated, message=message)
