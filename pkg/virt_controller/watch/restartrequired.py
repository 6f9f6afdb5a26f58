"""Whether a running VM needs a restart to take its current spec: KubeVirt's ``syncRestartRequired``.

When the VM controller starts a VMI it stores the VM's spec, with the instance type and preference
revisions the VMI was built from, in a ControllerRevision ``revision-start-vm-<uid>-<generation>``
owned by the VM. While that VMI exists, the template the VM would start now and the one it started
from are both expanded with their instance types and preferences and compared; what a running VM
takes without a restart is left out of the comparison (under the LiveUpdate rollout strategy: CPU
sockets, guest memory, node selector, affinity and tolerations; always: volumes and disks that are
hotplugged, interfaces that are only added, a firmware UUID the VMI already has). Whether those
live-updatable changes can be carried out, or need a restart after all, is :mod:`.liveupdate`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from kubevirt.virt_controller.watch.common import owner_reference
from kubevirt_api.core.v1 import VirtualMachineInstance, VirtualMachineInstanceSpec
from kubevirt_api.core.v1.vm import VirtualMachine, VirtualMachineSpec
from kubevirt_api.view import JSON

API_VERSION: Final = "kubevirt.io/v1"
NON_LIVE_UPDATABLE: Final = "a non-live-updatable field was changed in the template spec"

Expand = Callable[[VirtualMachine], VirtualMachineInstanceSpec]


def start_revision_prefix(vm_uid: str) -> str:
    return f"revision-start-vm-{vm_uid}-"


def start_revision(vm: VirtualMachine) -> JSON:
    """The ControllerRevision recording what ``vm`` starts with: its spec, the instance type and
    preference pinned to the revisions recorded in its status."""
    meta = vm.metadata
    assert meta is not None
    spec = vm.spec.to_dict()
    status = vm.status
    for matcher, ref in (
        ("instancetype", status.instancetype_ref if status else None),
        ("preference", status.preference_ref if status else None),
    ):
        revision = ref.controller_revision_ref.name if ref and ref.controller_revision_ref else None
        if spec.get(matcher) is not None and revision:
            spec[matcher]["revisionName"] = revision
    owner = owner_reference(API_VERSION, "VirtualMachine", meta.name or "", meta.uid or "")
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": f"{start_revision_prefix(meta.uid or '')}{meta.generation or 0}",
            "namespace": meta.namespace,
            "ownerReferences": [owner.to_dict()],
        },
        "data": {"spec": spec},
        "revision": meta.generation or 0,
    }


def start_revisions(vm: VirtualMachine, revisions: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The start revisions of ``vm`` among ``revisions``."""
    meta = vm.metadata
    assert meta is not None
    prefix = start_revision_prefix(meta.uid or "")
    return [
        revision
        for revision in revisions
        if revision["metadata"].get("namespace") == meta.namespace
        and str(revision["metadata"]["name"]).startswith(prefix)
    ]


def latest_start_spec(
    vm: VirtualMachine, revisions: Iterable[Mapping[str, Any]]
) -> VirtualMachineSpec | None:
    """The spec the running VMI started from (the start revision of the highest generation)."""
    found = start_revisions(vm, revisions)
    if not found:
        return None
    latest = max(found, key=lambda revision: int(revision.get("revision") or 0))
    data = latest.get("data") or {}
    if isinstance(data, str):  # a client may hand RawExtension data over as a JSON string
        data = json.loads(data)
    return VirtualMachineSpec.from_dict(data.get("spec") or {})


def restart_required(
    started: VirtualMachineSpec,
    vm: VirtualMachine,
    vmi: VirtualMachineInstance,
    expand: Expand,
    *,
    live_update: bool,
) -> str | None:
    """KubeVirt's message for the RestartRequired condition when a field the running VMI cannot take
    changed, else None. ``expand`` turns a VM into the VMI spec it would start (instance type and
    preference applied, defaults set)."""
    now = expand(vm).to_dict()
    then = expand(vm.model_copy(update={"spec": started})).to_dict()
    _take_hotplugged_storage(then, now)
    if live_update:
        _take(then, now, "domain", "cpu", "sockets", only_if_parent=True)
        if _get(now, "domain", "memory", "guest") is not None:
            _take(then, now, "domain", "memory", "guest")
        for field in ("nodeSelector", "affinity", "tolerations"):
            _take(then, now, field)
    if not _interfaces_need_restart(then, now):
        _take(then, now, "domain", "devices", "interfaces")
        _take(then, now, "networks")
    running_uuid = (vmi.spec.domain.firmware.uuid if vmi.spec.domain.firmware else None) or None
    if running_uuid and _get(now, "domain", "firmware", "uuid") == running_uuid:
        _take(then, now, "domain", "firmware", "uuid")
    return NON_LIVE_UPDATABLE if then != now else None


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    value: Any = obj
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _take(then: JSON, now: JSON, *path: str, only_if_parent: bool = False) -> None:
    """Makes ``then`` hold ``now``'s value at ``path`` (absent where ``now`` has none)."""
    *parents, last = path
    source = _get(now, *parents)
    target: Any = then
    for key in parents:
        child = target.get(key)
        if not isinstance(child, dict):
            if only_if_parent:
                return
            child = target[key] = {}
        target = child
    if isinstance(source, Mapping) and last in source:
        target[last] = source[last]
    elif only_if_parent and not isinstance(source, Mapping):
        return
    else:
        target.pop(last, None)


def _hotpluggable(volume: Mapping[str, Any]) -> bool:
    return any(
        isinstance(source, Mapping) and source.get("hotpluggable") is True for source in volume.values()
    )


def _take_hotplugged_storage(then: JSON, now: JSON) -> None:
    """Volumes (and their disks) plugged in or out while running need no restart."""

    def fixed(spec: JSON) -> tuple[list[Any], list[Any]]:
        volumes = spec.get("volumes") or []
        hotplugged = {v.get("name") for v in volumes if _hotpluggable(v)}
        disks = _get(spec, "domain", "devices", "disks") or []
        return (
            [v for v in volumes if v.get("name") not in hotplugged],
            [d for d in disks if d.get("name") not in hotplugged],
        )

    if fixed(then) == fixed(now):
        _take(then, now, "volumes")
        _take(then, now, "domain", "devices", "disks")


def _interfaces_need_restart(then: JSON, now: JSON) -> bool:
    """KubeVirt's network rule: an interface or network the VM started with that is gone or changed
    needs a restart; one only added is plugged in live."""
    for path in (("domain", "devices", "interfaces"), ("networks",)):
        before = {item.get("name"): item for item in _get(then, *path) or []}
        after = {item.get("name"): item for item in _get(now, *path) or []}
        if any(name not in after or after[name] != item for name, item in before.items()):
            return True
    return False
