"""Which of the domain's disks a block migration copies (KubeVirt v1.6's rules).

A VMI whose ``status.migrationMethod`` is ``BlockMigration`` has node-local disks (a containerDisk's
overlay, cloud-init and config disks, emptyDisks, hostDisks not marked shared): the target cannot open
them from shared storage, so libvirt copies them (``VIR_MIGRATE_NON_SHARED_INC``: only the top image, the
containerDisk's base is on both nodes). Persistent volumes are shared unless listed in
``status.migratedVolumes``; cd-roms are never copied; other read-only disks only when KubeVirt generated
them. The result is the list of target device names (``vda``) for ``VIR_MIGRATE_PARAM_MIGRATE_DISKS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lxml import etree

from kubevirt.virt_launcher.virtwrap.api.common import USER_ALIAS_PREFIX

_GENERATED_SOURCES = (
    "configMap",
    "secret",
    "downwardAPI",
    "serviceAccount",
    "cloudInitNoCloud",
    "cloudInitConfigDrive",
    "containerDisk",
)


def is_block_migration(vmi: Mapping[str, Any]) -> bool:
    # Imported here: the typed API is heavy and a launcher needs it only when asked to migrate.
    from kubevirt_api.core.v1.vmi import VirtualMachineInstanceMigrationMethod

    method = (vmi.get("status") or {}).get("migrationMethod")
    return method == VirtualMachineInstanceMigrationMethod.BLOCK_MIGRATION


def _volume_kinds(vmi: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """The names of the shared volumes and of the volumes KubeVirt generates the disk of."""
    migrated = {
        str(entry.get("volumeName"))
        for entry in (vmi.get("status") or {}).get("migratedVolumes") or []
        if isinstance(entry, Mapping)
    }
    shared: set[str] = set()
    generated: set[str] = set()
    for volume in (vmi.get("spec") or {}).get("volumes") or []:
        if not isinstance(volume, Mapping):
            continue
        name = str(volume.get("name", ""))
        if "persistentVolumeClaim" in volume or "dataVolume" in volume:
            if name not in migrated:
                shared.add(name)
        elif "hostDisk" in volume:
            if name not in migrated and (volume.get("hostDisk") or {}).get("shared") is True:
                shared.add(name)
        elif any(source in volume for source in _GENERATED_SOURCES):
            generated.add(name)
    return shared, generated


def disks_to_copy(domain_xml: str, vmi: Mapping[str, Any]) -> list[str]:
    """Target devices of the domain's disks that a block migration of ``vmi`` copies, in domain order."""
    shared, generated = _volume_kinds(vmi)
    root = etree.fromstring(domain_xml.encode())
    copy: list[str] = []
    for disk in root.iterfind("./devices/disk"):
        if disk.get("device") == "cdrom" or disk.get("type") not in ("file", "block"):
            continue
        alias = disk.find("alias")
        name = alias.get("name", "") if alias is not None else ""
        volume = name[len(USER_ALIAS_PREFIX) :] if name.startswith(USER_ALIAS_PREFIX) else name
        if disk.find("readonly") is not None and volume not in generated:
            continue
        if volume in shared:
            continue
        target = disk.find("target")
        if target is not None and target.get("dev"):
            copy.append(str(target.get("dev")))
    return copy
