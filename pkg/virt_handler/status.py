"""The parts of a VMI's status virt-handler derives from its domain (KubeVirt's ``updateVMIStatus``).

Each function updates ``vmi["status"]`` in place and is a no-op when nothing changed, so the caller's
"write only when the status differs" check stays exact (see :mod:`.status_conditions`).

What the VMI controller owns (``Ready``, ``qosClass``, ``launcherContainerImageVersion``, the
PVC part of ``volumeStatus``) and what the defaulting webhook sets (``currentCPUTopology``,
``memory.guestAtBoot``) are left alone here; the one exception, ``Ready=True`` with the first Running
write, is in :mod:`.ready`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kubevirt.libvirt_units import unit_bytes
from kubevirt.virt_handler.migratable import MigratabilityFacts, update_live_migratable
from kubevirt.virt_handler.status_conditions import conditions_of, find_condition, remove_condition
from kubevirt_api.resource import BINARY_SI, Quantity
from kubevirt_api.view import JSON

__all__ = ["apply_domain", "libvirt_quantity"]


PAUSED = "Paused"
AGENT_CONNECTED = "AgentConnected"
GUEST_AGENT_CHANNEL = "org.qemu.guest_agent.0"

# Why the domain is paused (the launcher's reason names) → the Paused condition's reason and message.
_PAUSE_REASONS = {
    "User": ("PausedByUser", "VMI was paused by user"),
    "IOError": ("PausedIOError", "VMI was paused, low-level IO error detected"),
    "Migration": ("PausedByMigrationMonitor", "VMI was paused by the migration monitor"),
}


def _domain_spec(domain: JSON | None) -> JSON:
    return dict((domain or {}).get("Spec") or {})


def update_machine(status: JSON, domain: JSON | None) -> None:
    machine = ((_domain_spec(domain).get("OS") or {}).get("Type") or {}).get("Machine")
    if machine:
        status["machine"] = {"type": machine}


def libvirt_quantity(value: int, unit: str | None) -> str | None:
    """A libvirt ``<currentMemory>`` as a Kubernetes quantity in binary units; None for an unknown unit."""
    factor = unit_bytes(unit)
    if factor is None:
        return None
    return str(Quantity.from_int(value * factor, BINARY_SI))


def _libvirt_bytes(memory: JSON) -> int | None:
    factor = unit_bytes(memory.get("Unit"))
    value = memory.get("Value")
    return None if factor is None or not isinstance(value, int) else value * factor


def hotplugged_guest_memory(status: JSON, domain: JSON | None) -> str | None:
    """With a virtio-mem device, the memory the guest booted with plus what the device has plugged into
    it so far (libvirt's ``<current>``): the guest's memory whatever the balloon reports."""
    device = (_domain_spec(domain).get("Devices") or {}).get("Memory") or {}
    if device.get("Model") != "virtio-mem":
        return None
    plugged = _libvirt_bytes((device.get("Target") or {}).get("Current") or {})
    at_boot = (status.get("memory") or {}).get("guestAtBoot")
    if plugged is None or not at_boot:
        return None
    try:
        boot = Quantity(str(at_boot)).value()
    except ValueError:
        return None
    return str(Quantity.from_int(boot + plugged, BINARY_SI))


def update_memory(status: JSON, domain: JSON | None) -> None:
    """``memory.guestCurrent``: the domain's current memory (KubeVirt's ``updateMemoryInfo``), or with
    memory hotplugged through virtio-mem, the boot memory and what the device plugged."""
    quantity = hotplugged_guest_memory(status, domain)
    if quantity is None:
        current = _domain_spec(domain).get("CurrentMemory") or {}
        if current.get("Value") is None:
            return
        quantity = libvirt_quantity(int(current["Value"]), current.get("Unit"))
    if quantity is None:
        return
    memory = dict(status.get("memory") or {})
    if memory.get("guestCurrent") != quantity:
        memory["guestCurrent"] = quantity
        status["memory"] = memory


def update_fs_freeze(status: JSON, domain: JSON | None) -> None:
    frozen = (((domain or {}).get("Status") or {}).get("FSFreezeStatus") or {}).get("Status") or ""
    if not frozen:
        return
    if frozen == "thawed":
        status.pop("fsFreezeStatus", None)
    else:
        status["fsFreezeStatus"] = frozen


def update_volume_targets(status: JSON, domain: JSON | None) -> None:
    """Each volume's guest device (``vda``...) from the domain's disks (an empty cdrom has none)."""
    volumes = status.get("volumeStatus")
    if not volumes:
        return
    targets = {}
    for disk in (_domain_spec(domain).get("Devices") or {}).get("Disks") or []:
        source = disk.get("Source") or {}
        if source.get("File") or source.get("Dev"):
            name = ((disk.get("Alias") or {}).get("Name") or "").removeprefix("ua-")
            targets[name] = (disk.get("Target") or {}).get("Device") or ""
    updated = []
    for volume in volumes:
        entry = dict(volume)
        # Always written, "" for a volume without a disk in the domain: the schema requires it (KubeVirt).
        entry["target"] = targets.get(str(entry.get("name")), "")
        updated.append(entry)
    updated.sort(key=lambda v: str(v.get("name")))
    if updated != volumes:
        status["volumeStatus"] = updated


def update_paused(status: JSON, domain: JSON | None, now: Callable[[], str]) -> None:
    state = ((domain or {}).get("Status") or {}).get("Status")
    if state != "Paused":
        remove_condition(status, PAUSED)
        return
    if find_condition(status, PAUSED) is not None:
        return
    known = _PAUSE_REASONS.get(str(((domain or {}).get("Status") or {}).get("Reason") or ""))
    if known is None or (known[0] == "PausedByMigrationMonitor" and not _paused_by_migration(status)):
        return  # paused by qemu for a reason no condition describes (e.g. at the end of a migration)
    reason, message = known
    stamp = now()
    status["conditions"] = [
        *conditions_of(status),
        {
            "type": PAUSED,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastProbeTime": stamp,
            "lastTransitionTime": stamp,
        },
    ]


def _paused_by_migration(status: JSON) -> bool:
    state = status.get("migrationState") or {}
    return state.get("mode") == "Paused" and not state.get("completed")


def agent_channel_connected(domain: JSON | None) -> bool:
    """Whether libvirt sees the guest agent on its channel (the live XML's target ``state``)."""
    channels = (_domain_spec(domain).get("Devices") or {}).get("Channels") or []
    return any(
        (c.get("Target") or {}).get("Name") == GUEST_AGENT_CHANNEL
        and (c.get("Target") or {}).get("State") == "connected"
        for c in channels
    )


def update_agent_connected(status: JSON, domain: JSON | None, now: Callable[[], str]) -> None:
    if not agent_channel_connected(domain):
        remove_condition(status, AGENT_CONNECTED)
    elif find_condition(status, AGENT_CONNECTED) is None:
        status["conditions"] = [
            *conditions_of(status),
            {"type": AGENT_CONNECTED, "status": "True", "lastProbeTime": now(), "lastTransitionTime": None},
        ]


def update_selinux_context(status: JSON, selinux_present: bool) -> None:
    """``selinuxContext``: KubeVirt's "none" on a host without SELinux (virt-controller renders hotplug
    attachment pods only once it is set). On an SELinux host it would be the launcher's context, which this
    project does not read yet: the field is left as it is."""
    if not selinux_present:
        status["selinuxContext"] = "none"


def selinux_present(root: Path = Path("/sys/fs/selinux")) -> bool:
    """Whether the host runs SELinux (its filesystem is mounted)."""
    return (root / "enforce").exists()


# Read once: a host does not gain or lose SELinux while virt-handler runs.
_SELINUX_PRESENT = selinux_present()


def apply_domain(vmi: JSON, domain: JSON | None, facts: MigratabilityFacts, now: Callable[[], str]) -> None:
    """Every domain-derived field and condition of ``vmi["status"]``, in KubeVirt's order."""
    status = vmi["status"]
    update_selinux_context(status, _SELINUX_PRESENT)
    update_volume_targets(status, domain)
    update_fs_freeze(status, domain)
    update_machine(status, domain)
    update_memory(status, domain)
    update_live_migratable(status, vmi, facts)
    update_agent_connected(status, domain, now)
    update_paused(status, domain, now)
