"""What a running VMI takes of its VM's changed template under the LiveUpdate rollout strategy: KubeVirt's
CPU, node affinity, tolerations and memory change handlers of the VM controller, and the VMI controller's
test for a CPU or memory hotplug still to be carried out.

Each handler compares the VM's template (instance type and preference applied) with the running VMI and
gives an :class:`Outcome`: the JSON patches that bring the change to the VMI, or the message of the VM's
RestartRequired condition when the change cannot be made live. A change that has to wait (another
hotplug or a migration in progress) raises :class:`LiveUpdateError`, which the VM controller reports and
retries (``migrating``: a migration of the VMI runs now). The patches carry ``test`` ops of the values
they replace, so one computed from a stale cache fails instead of overwriting a newer write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubevirt.defaults.hotplug import GIB, HOTPLUG_ALIGNMENT
from kubevirt.virt_controller.services.vmi_facts import vcpu_count
from kubevirt.virt_controller.watch.conditions import FALSE, TRUE, has_condition
from kubevirt_api.core.v1 import (
    CPU,
    VirtualMachineInstance,
    VirtualMachineInstanceConditionType,
    VirtualMachineInstanceSpec,
)
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.resource import BINARY_SI, Quantity

Op = dict[str, Any]
Patch = list[Op]

# RestartRequired messages of the CPU and memory handlers.
SOCKETS_ABOVE_MAX: Final = "CPU sockets updated in template spec to a value higher than what's available"
SOCKETS_REDUCED: Final = "Reduction of CPU socket count requires a restart"
CPU_HOTPLUG_ON_ARM: Final = "ARM doesn't support CPU hotplug"
MEMORY_HOTPLUG_FAILED: Final = (
    "memory updated in template spec. Memory-hotplug failed and is not available for this VM configuration"
)
MEMORY_NOT_MIGRATABLE: Final = (
    "memory updated in template spec. Memory-hotplug is only available for migratable VMs"
)
MEMORY_NO_MAX_GUEST: Final = (
    "memory updated in template spec. Memory-hotplug is not available for this VM configuration"
)
MEMORY_NOT_HOTPLUGGABLE: Final = "memory hotplug not supported, {}"
MEMORY_BELOW_BOOT: Final = "memory updated in template spec to a value lower than what the VM started with"

# Why a change has to wait (the VM controller retries).
CPU_HOTPLUG_IN_PROGRESS: Final = "another CPU hotplug is in progress"
CPU_HOTPLUG_WHILE_MIGRATING: Final = "CPU hotplug is not allowed while VMI is migrating"
MEMORY_HOTPLUG_IN_PROGRESS: Final = "another memory hotplug is in progress"
MEMORY_HOTPLUG_WHILE_MIGRATING: Final = "memory hotplug is not allowed while VMI is migrating"
AFFINITY_WHILE_MIGRATING: Final = "Node affinity should not be changed during VMI migration"
TOLERATIONS_WHILE_MIGRATING: Final = "tolerations should not be changed during VMI migration"

_AMD64: Final = "amd64"
_ARM64: Final = "arm64"
_ONE_GI_PAGES: Final = "1Gi"
_CONDITIONS = VirtualMachineInstanceConditionType


class LiveUpdateError(Exception):
    """The change cannot be made now but may be later: the VM is synced again."""


@dataclass(frozen=True)
class Outcome:
    """JSON patches for the VMI, each sent on its own and in order, or the RestartRequired message."""

    patches: tuple[Patch, ...] = ()
    restart_required: str | None = None
    # What was changed, for the log.
    summary: str | None = None


NOTHING: Final = Outcome()


# -- CPU --------------------------------------------------------------------------------------------------


def cpu_change(
    spec: VirtualMachineInstanceSpec,
    vmi: VirtualMachineInstance,
    *,
    migrating: bool,
    cpu_allocation_ratio: int,
    default_architecture: str,
) -> Outcome:
    """KubeVirt's ``handleCPUChangeRequest``: more sockets are plugged in, the CPU requests and limits
    (where the template sets them) grow by what the new vCPUs need at the allocation ratio."""
    wanted_cpu, cpu = spec.domain.cpu, vmi.spec.domain.cpu
    if wanted_cpu is None or cpu is None:
        return NOTHING
    wanted, current = wanted_cpu.sockets or 0, cpu.sockets or 0
    if wanted == current:
        return NOTHING
    if _has_vmi_condition(vmi, _CONDITIONS.VCPU_CHANGE, TRUE):
        raise LiveUpdateError(CPU_HOTPLUG_IN_PROGRESS)
    if migrating:
        raise LiveUpdateError(CPU_HOTPLUG_WHILE_MIGRATING)
    # A VMI without maxSockets has no socket to spare.
    if wanted > (cpu.max_sockets or 0):
        return Outcome(restart_required=SOCKETS_ABOVE_MAX)
    if wanted < current:
        return Outcome(restart_required=SOCKETS_REDUCED)
    if (spec.architecture or default_architecture) == _ARM64:
        return Outcome(restart_required=CPU_HOTPLUG_ON_ARM)

    ops = _set("/spec/domain/cpu/sockets", cpu.sockets, wanted)
    # Go's integer division: a ratio above 1000 adds nothing.
    delta = Quantity.from_milli((vcpu_count(wanted_cpu) - vcpu_count(cpu)) * (1000 // cpu_allocation_ratio))
    summary = f"hotplugging cpu to {wanted} sockets"
    for kind in ("requests", "limits"):
        if _quantity(spec, kind, "cpu").is_zero():
            continue
        grown = _quantity(vmi.spec, kind, "cpu") + delta
        ops.extend(_set_resource(vmi, kind, "cpu", grown))
        summary += f", setting {kind} to {grown}"
    return Outcome(patches=(ops,), summary=summary)


def cpu_hotplug_pending(vmi: VirtualMachineInstance) -> bool:
    """KubeVirt's ``requireCPUHotplug``: the VMI's spec asks for another vCPU count than the guest has."""
    cpu = vmi.spec.domain.cpu
    topology = vmi.status.current_cpu_topology if vmi.status is not None else None
    if topology is None or cpu is None or not cpu.max_sockets:
        return False
    running = CPU(cores=topology.cores, sockets=topology.sockets, threads=topology.threads)
    return vcpu_count(cpu) != vcpu_count(running)


# -- node placement --------------------------------------------------------------------------------------


def affinity_change(
    spec: VirtualMachineInstanceSpec, vmi: VirtualMachineInstance, *, migrating: bool
) -> Outcome:
    """KubeVirt's ``handleAffinityChangeRequest``: the affinity, then the node selector, each patched on
    its own."""
    wanted_affinity = spec.affinity.to_dict() if spec.affinity is not None else None
    affinity = vmi.spec.affinity.to_dict() if vmi.spec.affinity is not None else None
    affinity_changed = wanted_affinity != affinity
    # Go's semantic equality takes an empty map for a missing one.
    selector_changed = (spec.node_selector or None) != (vmi.spec.node_selector or None)
    if not (affinity_changed or selector_changed):
        return NOTHING
    if migrating:
        raise LiveUpdateError(AFFINITY_WHILE_MIGRATING)
    patches: list[Patch] = []
    if affinity_changed:
        patches.append(_replace_field("/spec/affinity", affinity, wanted_affinity))
    if selector_changed:
        patches.append(_replace_field("/spec/nodeSelector", vmi.spec.node_selector, spec.node_selector))
    return Outcome(patches=tuple(p for p in patches if p))


def tolerations_change(
    spec: VirtualMachineInstanceSpec, vmi: VirtualMachineInstance, *, migrating: bool
) -> Outcome:
    """KubeVirt's ``handleTolerationsChangeRequest``."""
    wanted = [t.to_dict() for t in spec.tolerations] if spec.tolerations is not None else None
    current = [t.to_dict() for t in vmi.spec.tolerations] if vmi.spec.tolerations is not None else None
    if (wanted or None) == (current or None):
        return NOTHING
    if migrating:
        raise LiveUpdateError(TOLERATIONS_WHILE_MIGRATING)
    patch = _replace_field("/spec/tolerations", current, wanted)
    return Outcome(patches=(patch,)) if patch else NOTHING


# -- annotations ------------------------------------------------------------------------------------------

# Annotations a running VMI takes from its VM as they change (KubeVirt's ``syncVMAnnotationsToVMI``): the
# descheduler's eviction hints from the template, the backup tools' hook switch from the VM itself.
TEMPLATE_ANNOTATIONS_TO_SYNC: Final = (
    "descheduler.alpha.kubernetes.io/evict",
    "descheduler.alpha.kubernetes.io/prefer-no-eviction",
)
VM_ANNOTATIONS_TO_SYNC: Final = ("kubevirt.io/skip-backup-hooks",)


def annotations_change(vm: VirtualMachine, vmi: VirtualMachineInstance) -> Patch:
    """The patch that brings the VMI's synced annotations to the VM's (empty when they agree): the whole
    annotation map, replaced after a ``test`` of the one read, so a concurrent change retries."""
    current = dict((vmi.metadata.annotations if vmi.metadata else None) or {})
    template = vm.spec.template.metadata
    sources = (
        (TEMPLATE_ANNOTATIONS_TO_SYNC, dict((template.annotations if template else None) or {})),
        (VM_ANNOTATIONS_TO_SYNC, dict((vm.metadata.annotations if vm.metadata else None) or {})),
    )
    wanted = dict(current)
    for keys, source in sources:
        for key in keys:
            if key in source:
                wanted[key] = source[key]
            else:
                wanted.pop(key, None)
    if wanted == current:
        return []
    has_map = vmi.metadata is not None and vmi.metadata.annotations is not None
    return _set("/metadata/annotations", current if has_map else None, wanted)


# -- memory -----------------------------------------------------------------------------------------------


def memory_change(
    spec: VirtualMachineInstanceSpec,
    vmi: VirtualMachineInstance,
    *,
    migrating: bool,
    default_architecture: str,
) -> Outcome:
    """KubeVirt's ``handleMemoryHotplugRequest``: the guest memory is raised (or lowered, down to what
    it booted with), the memory request and limit follow by the difference to what the guest has now."""
    wanted_memory, memory = spec.domain.memory, vmi.spec.domain.memory
    status_memory = vmi.status.memory if vmi.status is not None else None
    if (
        wanted_memory is None
        or wanted_memory.guest is None
        or memory is None
        or memory.guest is None
        or status_memory is None
        or status_memory.guest_current is None
    ):
        return NOTHING
    if _has_vmi_condition(vmi, _CONDITIONS.MEMORY_CHANGE, FALSE):
        return Outcome(restart_required=MEMORY_HOTPLUG_FAILED)
    wanted = wanted_memory.guest
    if wanted == memory.guest:
        return NOTHING
    if not vmi.is_migratable():
        return Outcome(restart_required=MEMORY_NOT_MIGRATABLE)
    if memory.max_guest is None:
        return Outcome(restart_required=MEMORY_NO_MAX_GUEST)
    if _has_vmi_condition(vmi, _CONDITIONS.MEMORY_CHANGE, TRUE):
        raise LiveUpdateError(MEMORY_HOTPLUG_IN_PROGRESS)
    if migrating:
        raise LiveUpdateError(MEMORY_HOTPLUG_WHILE_MIGRATING)
    unsupported = memory_hotplug_unsupported(spec, memory.max_guest, default_architecture)
    if unsupported is not None:
        return Outcome(restart_required=MEMORY_NOT_HOTPLUGGABLE.format(unsupported))
    at_boot = status_memory.guest_at_boot
    if at_boot is not None and wanted < at_boot:
        return Outcome(restart_required=MEMORY_BELOW_BOOT)
    # (KubeVirt's check of guest memory above maxGuest that follows is never reached: the validation
    # above already refuses it.)

    delta = Quantity.from_int(wanted.value() - status_memory.guest_current.value(), BINARY_SI)
    ops = _set("/spec/domain/memory/guest", str(memory.guest), str(wanted))
    summary = f"hotplugging memory to {wanted}"
    request = _quantity(vmi.spec, "requests", "memory")
    if not request.is_zero():
        grown = request + delta
        # An unplug may leave the request below the guest's size: it never goes below that.
        if grown < wanted:
            grown = wanted
            delta = Quantity.from_int(wanted.value() - grown.value(), BINARY_SI)
        ops.extend(_set_resource(vmi, "requests", "memory", grown))
        summary += f", setting requests to {grown}"
    if not _quantity(spec, "limits", "memory").is_zero():
        grown_limit = _quantity(vmi.spec, "limits", "memory") + delta
        ops.extend(_set_resource(vmi, "limits", "memory", grown_limit))
        summary += f", setting limits to {grown_limit}"
    return Outcome(patches=(ops,), summary=summary)


def memory_hotplug_unsupported(
    spec: VirtualMachineInstanceSpec, max_guest: Quantity | None, default_architecture: str
) -> str | None:
    """Why the guest memory of ``spec`` cannot be hotplugged up to ``max_guest`` (KubeVirt's
    ``ValidateLiveUpdateMemory``), or None."""
    domain = spec.domain
    cpu = domain.cpu
    if cpu is not None and cpu.realtime is not None:
        return "Memory hotplug is not compatible with realtime VMs"
    if cpu is not None and cpu.numa is not None and cpu.numa.guest_mapping_passthrough is not None:
        return "Memory hotplug is not compatible with guest mapping passthrough"
    if domain.launch_security is not None:
        return "Memory hotplug is not compatible with encrypted VMs"
    memory = domain.memory
    alignment = HOTPLUG_ALIGNMENT
    if memory is not None and memory.hugepages is not None and memory.hugepages.page_size == _ONE_GI_PAGES:
        alignment = GIB
    if memory is None or memory.guest is None:
        return "Guest memory must be configured when memory hotplug is enabled"
    if max_guest is None:
        return "Max guest memory must be configured when memory hotplug is enabled"
    if memory.guest > max_guest:
        return "Guest memory is greater than the configured maxGuest memory"
    aligned_to = Quantity.from_int(alignment, BINARY_SI)
    if memory.guest.value() % alignment != 0:
        return f"Guest memory must be {aligned_to} aligned"
    if max_guest.value() % alignment != 0:
        return f"MaxGuest must be {aligned_to} aligned"
    # The VM mutator writes the cluster's default architecture into a template that names none.
    if (spec.architecture or default_architecture) != _AMD64:
        return "Memory hotplug is only available for x86_64 VMs"
    if memory.guest.value() < GIB:
        return "Memory hotplug is only available for VMs with at least 1Gi of guest memory"
    return None


def memory_hotplug_pending(vmi: VirtualMachineInstance) -> bool:
    """KubeVirt's ``requireMemoryHotplug``: the VMI's spec asks for another guest memory size than the
    one last requested from the guest."""
    memory = vmi.spec.domain.memory
    status = vmi.status.memory if vmi.status is not None else None
    if status is None or memory is None or memory.guest is None or memory.max_guest is None:
        return False
    requested = status.guest_requested
    return memory.guest.value() != (requested.value() if requested is not None else 0)


# -- patch building ---------------------------------------------------------------------------------------


def _has_vmi_condition(vmi: VirtualMachineInstance, type_: str, status: str) -> bool:
    return has_condition(vmi.status.conditions if vmi.status is not None else None, type_, status)


def _set(path: str, current: Any, wanted: Any) -> Patch:
    """Replaces the value at ``path`` only if it is still ``current``; a missing one is added (a
    ``test`` cannot check that something is absent)."""
    if current is None:
        return [{"op": "add", "path": path, "value": wanted}]
    return [{"op": "test", "path": path, "value": current}, {"op": "replace", "path": path, "value": wanted}]


def _replace_field(path: str, current: Any, wanted: Any) -> Patch:
    """KubeVirt's patch of a VMI spec field to the template's value: added where the VMI has none,
    replaced after a ``test`` of the VMI's value, removed where the template has none. Removing a field
    the VMI does not have would fail on every retry, so nothing is sent then."""
    if wanted is None:
        return [{"op": "remove", "path": path}] if current is not None else []
    return _set(path, current, wanted)


def _quantity(spec: VirtualMachineInstanceSpec, kind: str, name: str) -> Quantity:
    """``resources.<kind>[<name>]``; zero when not set (Go's ``Requests.Cpu()``)."""
    resources = spec.domain.resources
    values: Mapping[str, Quantity] | None = getattr(resources, kind) if resources is not None else None
    found = (values or {}).get(name)
    return found if found is not None else Quantity("0")


def _set_resource(vmi: VirtualMachineInstance, kind: str, name: str, value: Quantity) -> Patch:
    """Sets ``resources.<kind>[<name>]`` of the VMI, testing the value it replaces; the levels the VMI
    lacks are added."""
    resources = vmi.spec.domain.resources
    values: Mapping[str, Quantity] | None = getattr(resources, kind) if resources is not None else None
    base = "/spec/domain/resources"
    if resources is None:
        return [{"op": "add", "path": base, "value": {kind: {name: str(value)}}}]
    if values is None:
        return [{"op": "add", "path": f"{base}/{kind}", "value": {name: str(value)}}]
    current = values.get(name)
    return _set(f"{base}/{kind}/{name}", str(current) if current is not None else None, str(value))
