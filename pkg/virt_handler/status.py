"""The parts of a VMI's status virt-handler derives from its domain (KubeVirt's ``updateVMIStatus``).

Each function updates ``vmi["status"]`` in place and is a no-op when nothing changed, so the caller's
"write only when the status differs" check stays exact: a condition that already says the same thing
is kept as it is (its timestamps included), never replaced by an equal one with a new time.

What the VMI controller owns (``Ready``, ``qosClass``, ``launcherContainerImageVersion``, the
PVC part of ``volumeStatus``) and what the defaulting webhook sets (``currentCPUTopology``,
``memory.guestAtBoot``) are left alone here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from kubevirt_api.resource import BINARY_SI, Quantity

JSON = dict[str, Any]

PAUSED = "Paused"
AGENT_CONNECTED = "AgentConnected"
LIVE_MIGRATABLE = "LiveMigratable"
STORAGE_LIVE_MIGRATABLE = "StorageLiveMigratable"
GUEST_AGENT_CHANNEL = "org.qemu.guest_agent.0"
BRIDGE_MIGRATION_ANNOTATION = "kubevirt.io/allow-pod-bridge-network-live-migration"
BLOCK_MIGRATION, LIVE_MIGRATION = "BlockMigration", "LiveMigration"

# Why the domain is paused (the launcher's reason names) → the Paused condition's reason and message.
_PAUSE_REASONS = {
    "User": ("PausedByUser", "VMI was paused by user"),
    "IOError": ("PausedIOError", "VMI was paused, low-level IO error detected"),
    "Migration": ("PausedByMigrationMonitor", "VMI was paused by the migration monitor"),
}
_LIBVIRT_UNITS = {
    "b": 1,
    "bytes": 1,
    "KB": 1000,
    "K": 1024,
    "KiB": 1024,
    "k": 1024,
    "MB": 1000**2,
    "M": 1024**2,
    "MiB": 1024**2,
    "GB": 1000**3,
    "G": 1024**3,
    "GiB": 1024**3,
    "TB": 1000**4,
    "T": 1024**4,
    "TiB": 1024**4,
}


@dataclass(frozen=True)
class NodeFacts:
    """What the node contributes to migratability: libvirt's host-model CPU (empty: none) and the
    network binding plugins the cluster configuration marks migratable."""

    host_cpu_model: str = ""
    migratable_bindings: frozenset[str] = field(default_factory=frozenset)


class NotMigratableError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _spec(vmi: JSON) -> JSON:
    return dict(vmi.get("spec") or {})


def _devices(vmi: JSON) -> JSON:
    return dict((_spec(vmi).get("domain") or {}).get("devices") or {})


def _conditions(status: JSON) -> list[JSON]:
    return list(status.get("conditions") or [])


def find_condition(status: JSON, kind: str) -> JSON | None:
    return next((c for c in _conditions(status) if c.get("type") == kind), None)


def _meaningful(condition: JSON) -> JSON:
    """A condition without its empty fields: the API server drops them, so comparing them would see a
    change where there is none."""
    return {k: v for k, v in condition.items() if v not in (None, "")}


def set_condition(status: JSON, wanted: JSON) -> None:
    """Puts ``wanted`` in place of the condition of its type unless that one already says the same."""
    current = find_condition(status, wanted["type"])
    if current is not None and _meaningful(current) == _meaningful(wanted):
        return
    status["conditions"] = [c for c in _conditions(status) if c.get("type") != wanted["type"]] + [wanted]


def remove_condition(status: JSON, kind: str) -> None:
    if find_condition(status, kind) is not None:
        status["conditions"] = [c for c in _conditions(status) if c.get("type") != kind]


def _domain_spec(domain: JSON | None) -> JSON:
    return dict((domain or {}).get("Spec") or {})


def update_machine(status: JSON, domain: JSON | None) -> None:
    machine = ((_domain_spec(domain).get("OS") or {}).get("Type") or {}).get("Machine")
    if machine:
        status["machine"] = {"type": machine}


def libvirt_quantity(value: int, unit: str | None) -> str | None:
    """A libvirt ``<currentMemory>`` as a Kubernetes quantity in binary units; None for an unknown unit."""
    factor = _LIBVIRT_UNITS.get(unit or "KiB")
    if factor is None:
        return None
    return str(Quantity.from_int(value * factor, BINARY_SI))


def update_memory(status: JSON, domain: JSON | None) -> None:
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
        target = targets.get(str(entry.get("name")), "")
        if target:
            entry["target"] = target
        else:
            entry.pop("target", None)
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
        *_conditions(status),
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


def update_agent_connected(status: JSON, domain: JSON | None, now: Callable[[], str]) -> None:
    channels = (_domain_spec(domain).get("Devices") or {}).get("Channels") or []
    connected = any(
        (c.get("Target") or {}).get("Name") == GUEST_AGENT_CHANNEL
        and (c.get("Target") or {}).get("State") == "connected"
        for c in channels
    )
    if not connected:
        remove_condition(status, AGENT_CONNECTED)
    elif find_condition(status, AGENT_CONNECTED) is None:
        status["conditions"] = [
            *_conditions(status),
            {"type": AGENT_CONNECTED, "status": "True", "lastProbeTime": now(), "lastTransitionTime": None},
        ]


def check_interfaces(vmi: JSON, facts: NodeFacts) -> None:
    """KubeVirt's rule: the pod network must be masquerade, a migratable binding plugin, or a bridge
    the VMI's annotation allows; secondary networks do not matter."""
    interfaces = list(_devices(vmi).get("interfaces") or [])
    if not interfaces:
        return
    pod = next((n for n in _spec(vmi).get("networks") or [] if "pod" in n), None)
    iface = next((i for i in interfaces if pod is not None and i.get("name") == pod.get("name")), None)
    if iface is None or "masquerade" in iface:
        return
    if "bridge" in iface and BRIDGE_MIGRATION_ANNOTATION in (
        (vmi.get("metadata") or {}).get("annotations") or {}
    ):
        return
    if (iface.get("binding") or {}).get("name") in facts.migratable_bindings:
        return
    raise NotMigratableError(
        "InterfaceNotLiveMigratable",
        "cannot migrate VMI which does not use masquerade, bridge with "
        f"{BRIDGE_MIGRATION_ANNOTATION} VM annotation or a migratable plugin to connect to the pod network",
    )


def _shared(access_modes: Collection[str]) -> bool:
    return "ReadWriteMany" in access_modes


def check_volumes(vmi: JSON) -> tuple[bool, NotMigratableError | None]:
    """Whether a migration must copy storage (block migration), and what forbids migrating at all."""
    status = vmi.get("status") or {}
    by_name = {str(v.get("name")): v for v in status.get("volumeStatus") or []}
    migrated = {str(v.get("volumeName")) for v in status.get("migratedVolumes") or []}
    filesystems = {str(f.get("name")) for f in _devices(vmi).get("filesystems") or []}
    read_only = {
        str(d.get("name"))
        for d in _devices(vmi).get("disks") or []
        if "cdrom" in d and (d["cdrom"] or {}).get("readonly", True)
    }
    block = bool(migrated)
    for volume in _spec(vmi).get("volumes") or []:
        name = str(volume.get("name"))
        claim_info = (by_name.get(name) or {}).get("persistentVolumeClaimInfo")
        if "persistentVolumeClaim" in volume or "dataVolume" in volume:
            source = volume.get("persistentVolumeClaim") or {}
            claim = source.get("claimName") if source else (volume.get("dataVolume") or {}).get("name")
            if claim_info is None:
                return True, NotMigratableError(
                    "DisksNotLiveMigratable",
                    f"cannot migrate VMI: Unable to determine if PVC {claim} is shared, live migration "
                    "requires that all PVCs must be shared (using ReadWriteMany access mode)",
                )
            if not _shared(claim_info.get("accessModes") or []) and name not in migrated:
                return True, _pvc_not_shared(str(claim))
        elif "hostDisk" in volume:
            if claim_info is not None:
                if not _shared(claim_info.get("accessModes") or []) and name not in migrated:
                    return True, _pvc_not_shared(str(claim_info.get("claimName")))
                continue
            if not (volume["hostDisk"] or {}).get("shared"):
                return True, NotMigratableError(
                    "DisksNotLiveMigratable", "cannot migrate VMI with non-shared HostDisk"
                )
        elif name not in filesystems and name not in read_only:
            block = True  # a local disk (containerDisk, cloud-init, emptyDisk...): its content is copied
    return block, None


def _pvc_not_shared(claim: str) -> NotMigratableError:
    return NotMigratableError(
        "DisksNotLiveMigratable",
        f"cannot migrate VMI: PVC {claim} is not shared, live migration requires that all PVCs must be "
        "shared (using ReadWriteMany access mode)",
    )


def _other_blockers(vmi: JSON, facts: NodeFacts) -> list[NotMigratableError]:
    """Everything but the volumes that forbids live migration, in KubeVirt's order."""
    found = []
    try:
        check_interfaces(vmi, facts)
    except NotMigratableError as err:
        found.append(err)
    cpu = (_spec(vmi).get("domain") or {}).get("cpu") or {}
    if cpu.get("model") == "host-model" and not facts.host_cpu_model:
        node = (vmi.get("status") or {}).get("nodeName") or ""
        found.append(
            NotMigratableError(
                "CPUModeLiveMigratable", f'the node "{node}" does not allow migration with host-model'
            )
        )
    devices = _devices(vmi)
    if devices.get("hostDevices") or devices.get("gpus"):
        found.append(NotMigratableError("HostDeviceNotLiveMigratable", "VMI uses a PCI host devices"))
    launch_security = (_spec(vmi).get("domain") or {}).get("launchSecurity") or {}
    if "sev" in launch_security:
        found.append(NotMigratableError("SEVNotLiveMigratable", "VMI uses SEV"))
    if any(((d.get("lun") or {}).get("reservation")) for d in devices.get("disks") or []):
        found.append(
            NotMigratableError(
                "PersistentReservationNotLiveMigratable", "VMI uses SCSI persitent reservation"
            )
        )
    hyperv = ((_spec(vmi).get("domain") or {}).get("features") or {}).get("hypervPassthrough") or {}
    if hyperv.get("enabled"):
        found.append(NotMigratableError("HypervPassthroughNotLiveMigratable", "VMI uses hyperv passthrough"))
    return found


def update_live_migratable(status: JSON, vmi: JSON, facts: NodeFacts) -> None:
    """``LiveMigratable`` (with the first reason against), ``migrationMethod`` and
    ``StorageLiveMigratable`` (every reason against but the volumes, joined)."""
    block, volumes_error = check_volumes(vmi)
    others = _other_blockers(vmi, facts)
    first = others[0] if others else volumes_error
    if first is None:
        live: JSON = {
            "type": LIVE_MIGRATABLE,
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": None,
        }
    else:
        live = {
            "type": LIVE_MIGRATABLE,
            "status": "False",
            "reason": first.reason,
            "message": first.message,
            "lastProbeTime": None,
            "lastTransitionTime": None,
        }
    set_condition(status, live)
    status["migrationMethod"] = BLOCK_MIGRATION if block else LIVE_MIGRATION
    if others:
        storage: JSON = {
            "type": STORAGE_LIVE_MIGRATABLE,
            "status": "False",
            "reason": "NotMigratable",
            "message": ", ".join(f"{b.reason}: {b.message}" for b in others),
            "lastProbeTime": None,
            "lastTransitionTime": None,
        }
    else:
        storage = {
            "type": STORAGE_LIVE_MIGRATABLE,
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": None,
        }
    set_condition(status, storage)


def apply_domain(vmi: JSON, domain: JSON | None, facts: NodeFacts, now: Callable[[], str]) -> None:
    """Every domain-derived field and condition of ``vmi["status"]``, in KubeVirt's order."""
    status = vmi["status"]
    update_volume_targets(status, domain)
    update_fs_freeze(status, domain)
    update_machine(status, domain)
    update_memory(status, domain)
    update_live_migratable(status, vmi, facts)
    update_agent_connected(status, domain, now)
    update_paused(status, domain, now)
