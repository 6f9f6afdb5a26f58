"""The VM a snapshot is taken of: its state (online, paused, agent), its lock, and what the content keeps.

A VM is locked for one snapshot by ``status.snapshotInProgress`` and a finalizer: the VM webhook then
refuses changes to its volumes and run state, and the VM cannot go away before the snapshot lets go.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from kubevirt.client import PODS, VIRTUAL_MACHINES, KubeApi
from kubevirt.controller import Store, key_for
from kubevirt.virt_controller.watch.common import finalizers_patch
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.view import JSON

from .classes import volume_claim
from .common import SOURCE_FINALIZER, finalizers, finalizers_test_value, without_managed_fields

_BOUND = "Bound"


class SourceError(Exception):
    """The VM's recorded spec cannot be read (its text is the snapshot's error)."""


@dataclass
class SourceState:
    vm: JSON
    online: bool
    paused: bool
    guest_agent: bool
    frozen: bool
    locked: bool
    lock_message: str


def source_state(vm: JSON, vmi: VirtualMachineInstance | None, snapshot_name: str) -> SourceState:
    conditions = {c.type: c.status for c in (vmi.status.conditions or ())} if vmi and vmi.status else {}
    locked = (vm.get("status") or {}).get("snapshotInProgress") == snapshot_name and SOURCE_FINALIZER in (
        finalizers(vm)
    )
    return SourceState(
        vm=vm,
        online=vmi is not None,
        paused=conditions.get("Paused") == "True",
        guest_agent="AgentConnected" in conditions,
        frozen=vmi is not None and vmi.status is not None and vmi.status.fs_freeze_status == "frozen",
        locked=locked,
        lock_message="Source locked and operation in progress" if locked else "Source not locked",
    )


def vm_claims(vm: JSON) -> list[str]:
    """The claims of the VM's template volumes, each once, in order."""
    volumes = (((vm.get("spec") or {}).get("template") or {}).get("spec") or {}).get("volumes") or []
    return list(dict.fromkeys(claim for claim in map(volume_claim, volumes) if claim))


def lock(api: KubeApi, state: SourceState, pvcs: Store[JSON], snapshot_name: str) -> bool:
    """Locks the VM for ``snapshot_name``; False (with the reason added to the lock message) while it
    cannot be locked yet."""
    if state.locked:
        return True
    vm = state.vm
    meta = vm["metadata"]
    namespace = meta.get("namespace") or ""
    claims = vm_claims(vm)
    problem = _claim_problem(pvcs, namespace, claims)
    if problem:
        state.lock_message += f" source {namespace}/{meta['name']} {problem}"
        return False
    if not state.online:
        users = _pods_using(api, namespace, set(claims))
        if users:
            state.lock_message += f" source is offline but {users} pods using PVCs [{' '.join(claims)}]"
            return False
    holder = (vm.get("status") or {}).get("snapshotInProgress")
    if holder is not None and holder != snapshot_name:
        state.lock_message += f' snapshot "{holder}" in progress'
        return False
    if holder is None:
        vm = copy.deepcopy(vm)
        vm.setdefault("status", {})["snapshotInProgress"] = snapshot_name
        vm = api.update_status(VIRTUAL_MACHINES, namespace, vm)
    current = finalizers(vm)
    if SOURCE_FINALIZER not in current:
        patch = finalizers_patch(finalizers_test_value(vm), [*current, SOURCE_FINALIZER])
        vm = api.patch(VIRTUAL_MACHINES, namespace, meta["name"], patch, patch_type="json")
    state.vm = vm
    state.locked = True
    state.lock_message = "Source locked and operation in progress"
    return True


def unlock(api: KubeApi, state: SourceState, snapshot_name: str) -> bool:
    """Lets go of the VM if ``snapshot_name`` holds it; True when it did."""
    vm = state.vm
    if (vm.get("status") or {}).get("snapshotInProgress") != snapshot_name:
        return False
    meta = vm["metadata"]
    current = finalizers(vm)
    if SOURCE_FINALIZER in current:
        wanted = [name for name in current if name != SOURCE_FINALIZER]
        vm = api.patch(
            VIRTUAL_MACHINES,
            meta.get("namespace"),
            meta["name"],
            finalizers_patch(finalizers_test_value(vm), wanted),
        )
    vm = copy.deepcopy(vm)
    (vm.get("status") or {}).pop("snapshotInProgress", None)
    state.vm = api.update_status(VIRTUAL_MACHINES, meta.get("namespace"), vm)
    state.locked = False
    return True


def recorded_vm(state: SourceState, vmi: VirtualMachineInstance | None, revisions: Store[JSON]) -> JSON:
    """The VM as the content keeps it: a stopped VM's spec as it is; a running VM's spec as it started
    (its start revision) with today's volumes, disks and DataVolume templates (those may be hotplugged)."""
    vm = state.vm
    recorded: JSON = {"metadata": without_managed_fields(vm["metadata"]), "spec": copy.deepcopy(vm["spec"])}
    if vmi is None:
        recorded["status"] = {}
        return recorded
    name = vmi.status.virtual_machine_revision_name if vmi.status is not None else None
    revision = revisions.get_by_key(key_for(vm["metadata"].get("namespace"), name or ""))
    if revision is None:
        raise SourceError(f"vm revision {name or ''} doesn't exist")
    spec: dict[str, Any] = copy.deepcopy((revision.get("data") or {}).get("spec") or {})
    live_template = vm["spec"].get("template") or {}
    template_spec = spec.setdefault("template", {}).setdefault("spec", {})
    live_spec = live_template.get("spec") or {}
    template_spec["volumes"] = copy.deepcopy(live_spec.get("volumes"))
    devices = template_spec.setdefault("domain", {}).setdefault("devices", {})
    devices["disks"] = copy.deepcopy(((live_spec.get("domain") or {}).get("devices") or {}).get("disks"))
    spec["dataVolumeTemplates"] = copy.deepcopy(vm["spec"].get("dataVolumeTemplates"))
    recorded["spec"] = _without_nulls(spec)
    recorded["status"] = {}
    return recorded


def _without_nulls(spec: dict[str, Any]) -> dict[str, Any]:
    template_spec = spec["template"]["spec"]
    for holder, key in ((spec, "dataVolumeTemplates"), (template_spec, "volumes")):
        if holder.get(key) is None:
            holder.pop(key, None)
    devices = template_spec["domain"]["devices"]
    if devices.get("disks") is None:
        devices.pop("disks", None)
    return spec


def _claim_problem(pvcs: Store[JSON], namespace: str, claims: list[str]) -> str:
    for claim in claims:
        pvc = pvcs.get_by_key(key_for(namespace, claim))
        if pvc is None:
            return f"volume doesnt exist: {claim}"
        if (pvc.get("status") or {}).get("phase") != _BOUND:
            return f"volume not bound: {claim}"
    return ""


def _pods_using(api: KubeApi, namespace: str, claims: set[str]) -> int:
    """How many pods of the namespace mount one of the claims (read when the VM is offline only)."""
    if not claims:
        return 0
    count = 0
    pods, _ = api.list(PODS, namespace)
    for pod in pods:
        if (pod.get("status") or {}).get("phase") == "Succeeded":
            continue
        volumes = (pod.get("spec") or {}).get("volumes") or []
        if any((volume.get("persistentVolumeClaim") or {}).get("claimName") in claims for volume in volumes):
            count += 1
    return count
