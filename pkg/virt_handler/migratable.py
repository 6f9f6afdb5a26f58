"""Whether a VMI may be live-migrated (KubeVirt's ``calculateLiveMigrationCondition``): the
``LiveMigratable`` and ``StorageLiveMigratable`` conditions and ``migrationMethod``.

Volumes decide between live and block migration (a local disk's content must be copied) and forbid
migration for claims that are not shared; interfaces, a host-model CPU the node cannot offer, host
devices, SEV, SCSI reservations and Hyper-V passthrough forbid it too, in KubeVirt's order.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from kubevirt.virt_handler.status_conditions import set_condition
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceMigrationMethod
from kubevirt_api.view import JSON

LIVE_MIGRATABLE = "LiveMigratable"
STORAGE_LIVE_MIGRATABLE = "StorageLiveMigratable"
BRIDGE_MIGRATION_ANNOTATION = "kubevirt.io/allow-pod-bridge-network-live-migration"
BLOCK_MIGRATION = VirtualMachineInstanceMigrationMethod.BLOCK_MIGRATION
LIVE_MIGRATION = VirtualMachineInstanceMigrationMethod.LIVE_MIGRATION


@dataclass(frozen=True)
class MigratabilityFacts:
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


def check_interfaces(vmi: JSON, facts: MigratabilityFacts) -> None:
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


def _other_blockers(vmi: JSON, facts: MigratabilityFacts) -> list[NotMigratableError]:
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


def update_live_migratable(status: JSON, vmi: JSON, facts: MigratabilityFacts) -> None:
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
