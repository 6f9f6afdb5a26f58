"""The migration target's part of a CPU or memory hotplug (KubeVirt's ``hotplugCPU`` and ``hotplugMemory``).

virt-controller carries out a hotplug the running launcher cannot take in place by migrating the VMI
to a pod sized for the new spec; when the guest runs there, the target virt-handler asks that launcher
for the new vCPUs and memory, and the VMI's status records the outcome: ``currentCPUTopology`` after a
vCPU change, ``memory.guestRequested`` after a memory change. The ``HotVCPUChange`` and ``HotMemoryChange``
conditions and the labels in which virt-controller told the target pod's resources are dropped; a
failed memory hotplug leaves its condition False instead.

Each step changes a copy of the VMI in place; :func:`hand_off_patch` turns the changes into the parts
of the take-over's merge patch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubevirt.hardware import number_of_vcpus
from kubevirt.virt_handler.status_conditions import conditions_of, find_condition, remove_condition
from kubevirt_api.core.v1.constants import (
    MEMORY_HOTPLUG_OVERHEAD_RATIO_LABEL,
    VIRTUAL_MACHINE_POD_CPU_LIMITS_LABEL,
    VIRTUAL_MACHINE_POD_MEMORY_REQUESTS_LABEL,
)
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceConditionType
from kubevirt_api.resource import Quantity
from kubevirt_api.view import JSON

VCPU_CHANGE = VirtualMachineInstanceConditionType.VCPU_CHANGE
MEMORY_CHANGE = VirtualMachineInstanceConditionType.MEMORY_CHANGE
MEMORY_HOTPLUG_FAILED_REASON = "Memory Hotplug Failed"
MEMORY_HOTPLUG_FAILED_MESSAGE = "memory hotplug failed, the VM configuration is not supported"
HOTPLUG_LABELS = (
    VIRTUAL_MACHINE_POD_CPU_LIMITS_LABEL,
    VIRTUAL_MACHINE_POD_MEMORY_REQUESTS_LABEL,
    MEMORY_HOTPLUG_OVERHEAD_RATIO_LABEL,
)
# What the events of a failed step say (their reason is the error, as KubeVirt records them).
CPU_FAILED_MESSAGE = "failed to change vCPUs"
MEMORY_FAILED_MESSAGE = "failed to update guest memory"

# The launcher command of a step, sent with the VMI as it is then.
LauncherCommand = Callable[[str, JSON], None]
# The launcher pod's memory beyond the guest's for a VMI, given the overhead ratio virt-controller used.
MemoryOverhead = Callable[[JSON, str | None], Quantity]


class HotplugError(Exception):
    """A hotplug step failed; the message is the event's reason."""


def no_overhead(vmi: JSON, ratio: str | None) -> Quantity:
    """The launcher pod's overhead is virt-controller's formula, out of virt-handler's reach: without one
    given, the pod's memory request is checked against the guest's request alone."""
    return Quantity("0")


def _labels(vmi: JSON) -> dict[str, Any]:
    metadata = vmi.setdefault("metadata", {})
    labels: dict[str, Any] = metadata.get("labels") or {}
    metadata["labels"] = labels
    return labels


def _status(vmi: JSON) -> JSON:
    status: JSON = vmi.setdefault("status", {})
    return status


def _cpu(vmi: JSON) -> JSON:
    return dict(((vmi.get("spec") or {}).get("domain") or {}).get("cpu") or {})


def hotplug_cpu(vmi: JSON, command: LauncherCommand) -> None:
    """After a vCPU change: the launcher's domain gets the spec's vCPUs and ``currentCPUTopology`` the
    spec's topology. The condition and the CPU limit label go whatever the outcome."""
    status = _status(vmi)
    try:
        if find_condition(status, VCPU_CHANGE) is None:
            return
        cpu = _cpu(vmi)
        if cpu.get("dedicatedCpuPlacement"):
            _check_cpu_limit(_labels(vmi).get(VIRTUAL_MACHINE_POD_CPU_LIMITS_LABEL), number_of_vcpus(cpu))
        command("SyncVirtualMachineCPUs", vmi)
        # Go's omitempty: a part the spec leaves at zero is not written.
        parts = ("sockets", "cores", "threads")
        status["currentCPUTopology"] = {key: cpu[key] for key in parts if cpu.get(key)}
    finally:
        _labels(vmi).pop(VIRTUAL_MACHINE_POD_CPU_LIMITS_LABEL, None)
        remove_condition(status, VCPU_CHANGE)


def _check_cpu_limit(text: str | None, vcpus: int) -> None:
    """Dedicated vCPUs must fit in the target pod's CPU limit."""
    if not text:
        raise HotplugError("cannot read CPU limit from VMI annotation")
    try:
        limit = int(text)
    except ValueError as err:
        raise HotplugError(f"cannot parse CPU limit from VMI annotation: {err}") from None
    if vcpus > limit:
        raise HotplugError(f"number of requested VCPUS ({vcpus}) exceeds the limit ({limit})")


def hotplug_memory(vmi: JSON, command: LauncherCommand, overhead: MemoryOverhead = no_overhead) -> None:
    """After a memory change: when the target pod requests the memory the new spec needs, the launcher's
    domain gets the spec's guest memory and ``memory.guestRequested`` records it. The labels go whatever
    the outcome; a launcher that fails marks the condition False."""
    status = _status(vmi)
    labels = _labels(vmi)
    try:
        if find_condition(status, MEMORY_CHANGE) is None:
            return
        domain = (vmi.get("spec") or {}).get("domain") or {}
        guest = (domain.get("memory") or {}).get("guest")
        text = str(labels.get(VIRTUAL_MACHINE_POD_MEMORY_REQUESTS_LABEL) or "")
        try:
            pod_request = Quantity(text)
        except ValueError as err:
            remove_condition(status, MEMORY_CHANGE)
            raise HotplugError(f"cannot parse Memory requests from VMI label: {err}") from None
        required = overhead(vmi, labels.get(MEMORY_HOTPLUG_OVERHEAD_RATIO_LABEL))
        requested = ((domain.get("resources") or {}).get("requests") or {}).get("memory")
        if requested is not None:
            required = required + Quantity.coerce(requested)
        if pod_request < required:
            remove_condition(status, MEMORY_CHANGE)
            raise HotplugError(
                f"amount of requested guest memory ({guest}) exceeds the launcher memory request ({text})"
            )
        try:
            command("SyncVirtualMachineMemory", vmi)
        except HotplugError:
            _mark_memory_hotplug_failed(status)
            raise
        remove_condition(status, MEMORY_CHANGE)
        status["memory"] = {**(status.get("memory") or {}), "guestRequested": guest}
    finally:
        labels.pop(VIRTUAL_MACHINE_POD_MEMORY_REQUESTS_LABEL, None)
        labels.pop(MEMORY_HOTPLUG_OVERHEAD_RATIO_LABEL, None)


def _mark_memory_hotplug_failed(status: JSON) -> None:
    """KubeVirt's condition manager: the condition is replaced only when its status or reason differ."""
    current = find_condition(status, MEMORY_CHANGE)
    if current is not None and (
        current.get("status") == "False" and current.get("reason") == MEMORY_HOTPLUG_FAILED_REASON
    ):
        return
    failed = {
        "type": MEMORY_CHANGE,
        "status": "False",
        "reason": MEMORY_HOTPLUG_FAILED_REASON,
        "message": MEMORY_HOTPLUG_FAILED_MESSAGE,
        "lastProbeTime": None,
        "lastTransitionTime": None,
    }
    status["conditions"] = [
        failed if c.get("type") == MEMORY_CHANGE else c for c in conditions_of(status)
    ] + ([] if current is not None else [failed])


def hand_off_patch(before: JSON, after: JSON) -> tuple[JSON, JSON]:
    """The labels (removed ones as None) and status fields a take-over writes for what the steps
    changed in ``after``, a copy of ``before``."""
    old_labels = (before.get("metadata") or {}).get("labels") or {}
    new_labels = (after.get("metadata") or {}).get("labels") or {}
    labels: JSON = {key: None for key in old_labels if key in HOTPLUG_LABELS and key not in new_labels}
    old_status, new_status = before.get("status") or {}, after.get("status") or {}
    status: JSON = {}
    if conditions_of(old_status) != conditions_of(new_status):
        status["conditions"] = conditions_of(new_status)
    old_topology = old_status.get("currentCPUTopology") or {}
    new_topology = new_status.get("currentCPUTopology") or {}
    if old_topology != new_topology:
        # A merge patch: each part the new topology lacks is removed.
        status["currentCPUTopology"] = {key: new_topology.get(key) for key in {*old_topology, *new_topology}}
    old_memory, new_memory = old_status.get("memory") or {}, new_status.get("memory") or {}
    if old_memory.get("guestRequested") != new_memory.get("guestRequested"):
        status["memory"] = {"guestRequested": new_memory.get("guestRequested")}
    return labels, status
