"""Whether a running VM needs a restart to take its current spec: KubeVirt's ``syncRestartRequired`` and
the outcomes of its CPU and memory change handling that end in the RestartRequired condition.

When the VM controller starts a VMI it stores the VM's spec, with the instance type and preference
revisions the VMI was built from, in a ControllerRevision ``revision-start-vm-<uid>-<generation>``
owned by the VM. While that VMI exists, the template the VM would start now and the one it started
from are both expanded with their instance types and preferences and compared; what a running VM
takes without a restart is left out of the comparison (under the LiveUpdate rollout strategy: CPU
sockets, guest memory, node selector, affinity and tolerations; always: volumes and disks that are
hotplugged, interfaces that are only added, a firmware UUID the VMI already has).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from kubevirt.virt_controller.watch.common import owner_reference
from kubevirt.virt_controller.watch.conditions import get_condition
from kubevirt_api.core.v1 import VirtualMachineInstance, VirtualMachineInstanceSpec
from kubevirt_api.core.v1.vm import VirtualMachine, VirtualMachineSpec
from kubevirt_api.resource import Quantity, QuantityError
from kubevirt_api.view import JSON

API_VERSION: Final = "kubevirt.io/v1"
NON_LIVE_UPDATABLE: Final = "a non-live-updatable field was changed in the template spec"
SOCKETS_ABOVE_MAX: Final = "CPU sockets updated in template spec to a value higher than what's available"
SOCKETS_REDUCED: Final = "Reduction of CPU socket count requires a restart"
MEMORY_NOT_MIGRATABLE: Final = (
    "memory updated in template spec. Memory-hotplug is only available for migratable VMs"
)
MEMORY_NO_MAX_GUEST: Final = (
    "memory updated in template spec. Memory-hotplug is not available for this VM configuration"
)
MEMORY_NOT_HOTPLUGGABLE: Final = "memory hotplug not supported, {}"
MEMORY_BELOW_BOOT: Final = "memory updated in template spec to a value lower than what the VM started with"
_LIVE_MIGRATABLE: Final = "LiveMigratable"

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
    """KubeVirt's message for the RestartRequired condition, or None when the running VMI can carry
    the VM's spec. ``expand`` turns a VM into the VMI spec it would start (instance type and preference
    applied, defaults set)."""
    now = expand(vm).to_dict()
    then = expand(vm.model_copy(update={"spec": started})).to_dict()
    _take_hotplugged_storage(then, now)
    if live_update:
        _take(then, now, "domain", "cpu", "sockets", only_if_parent=True)
        _take(then, now, "domain", "memory", "guest")
        for field in ("nodeSelector", "affinity", "tolerations"):
            _take(then, now, field)
    if not _interfaces_need_restart(then, now):
        _take(then, now, "domain", "devices", "interfaces")
        _take(then, now, "networks")
    running_uuid = (vmi.spec.domain.firmware.uuid if vmi.spec.domain.firmware else None) or None
    if running_uuid and _get(now, "domain", "firmware", "uuid") == running_uuid:
        _take(then, now, "domain", "firmware", "uuid")
    if then != now:
        return NON_LIVE_UPDATABLE
    if not live_update:
        return None
    return _cpu_change(now, vmi) or _memory_change(now, vmi)


def _cpu_change(now: JSON, vmi: VirtualMachineInstance) -> str | None:
    cpu = vmi.spec.domain.cpu
    sockets = _get(now, "domain", "cpu", "sockets")
    if cpu is None or sockets is None or cpu.sockets is None or sockets == cpu.sockets:
        return None
    if cpu.max_sockets and sockets > cpu.max_sockets:
        return SOCKETS_ABOVE_MAX
    if sockets < cpu.sockets:
        return SOCKETS_REDUCED
    return None


def _memory_change(now: JSON, vmi: VirtualMachineInstance) -> str | None:
    memory = vmi.spec.domain.memory
    guest = _get(now, "domain", "memory", "guest")
    if memory is None or memory.guest is None or guest is None or str(guest) == str(memory.guest):
        return None
    if vmi.status is None or vmi.status.memory is None or vmi.status.memory.guest_current is None:
        return None
    migratable = get_condition(vmi.status.conditions, _LIVE_MIGRATABLE)
    if migratable is None or migratable.status != "True":
        return MEMORY_NOT_MIGRATABLE
    if memory.max_guest is None:
        return MEMORY_NO_MAX_GUEST
    try:
        wanted = Quantity(str(guest)).value()
    except QuantityError:
        return None
    unsupported = _memory_hotplug_unsupported(now, wanted, memory.max_guest.value())
    if unsupported is not None:
        return MEMORY_NOT_HOTPLUGGABLE.format(unsupported)
    at_boot = vmi.status.memory.guest_at_boot
    if at_boot is not None and wanted < at_boot.value():
        return MEMORY_BELOW_BOOT
    return None  # KubeVirt would hotplug the difference


def _memory_hotplug_unsupported(now: JSON, wanted: int, max_guest: int) -> str | None:
    """Why KubeVirt's memory hotplug cannot take the VM's spec (the part of its validation that does
    not depend on block alignment), or None."""
    cpu = _get(now, "domain", "cpu") or {}
    if cpu.get("realtime") is not None:
        return "Memory hotplug is not compatible with realtime VMs"
    if (cpu.get("numa") or {}).get("guestMappingPassthrough") is not None:
        return "Memory hotplug is not compatible with guest mapping passthrough"
    if _get(now, "domain", "launchSecurity") is not None:
        return "Memory hotplug is not compatible with encrypted VMs"
    if wanted > max_guest:
        return "Guest memory is greater than the configured maxGuest memory"
    return None


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
