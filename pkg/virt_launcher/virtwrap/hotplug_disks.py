"""Hotplugged disks on a running domain: which to attach, detach or swap, and doing it (KubeVirt's
``syncDisks``).

A hotplugged disk is one whose source is under virt-handler's hotplug directory in the pod
(``/var/run/kubevirt/hotplug-disks/``). Disks are matched by their guest device (``target dev``), as
KubeVirt does: the converter keeps a hotplugged disk's device stable through the VMI's volume status.
Only disks on the virtio or SCSI bus (or without one) are attached and detached live; a CD-ROM whose
medium is a hotplugged volume (or none) gets its medium swapped instead. Each change goes to the live
domain and to its definition.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat
from collections.abc import Sequence
from typing import Any

import libvirt

from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.errors import LibvirtCallError
from kubevirt.virt_launcher.virtwrap.node import (
    NodeFacts,
    choose_disk_cache_modes,
    choose_disk_io_modes,
    probe_devices,
)
from kubevirt_api.core.v1.constants import HOTPLUG_DISK_DIR
from kubevirt_api.view import VMIView

LIVE_AND_CONFIG = libvirt.VIR_DOMAIN_AFFECT_LIVE | libvirt.VIR_DOMAIN_AFFECT_CONFIG
_LIVE_BUSES = frozenset({None, "", "virtio", "scsi"})


def source_path(disk: api.Disk) -> str:
    """The disk's file, else its device ("" for an empty CD-ROM)."""
    return disk.source.file or disk.source.dev or ""


def is_hotplug_disk(disk: api.Disk) -> bool:
    return source_path(disk).startswith(HOTPLUG_DISK_DIR)


def volume_name(disk: api.Disk) -> str:
    """The VMI disk a domain disk stands for (its user alias without ``ua-``)."""
    alias = disk.alias.name if disk.alias is not None and disk.alias.name else ""
    return alias.removeprefix(api.USER_ALIAS_PREFIX)


def _live_hotplug(disk: api.Disk) -> bool:
    return is_hotplug_disk(disk) and disk.target.bus in _LIVE_BUSES


def detached_disks(live: Sequence[api.Disk], wanted: Sequence[api.Disk]) -> list[api.Disk]:
    """The live domain's hotplugged disks whose device the wanted domain no longer has."""
    devices = {disk.target.dev for disk in wanted}
    return [disk for disk in live if _live_hotplug(disk) and disk.target.dev not in devices]


def attached_disks(live: Sequence[api.Disk], wanted: Sequence[api.Disk]) -> list[api.Disk]:
    """The wanted domain's hotplugged disks whose device the live domain does not have yet."""
    devices = {disk.target.dev for disk in live}
    return [disk for disk in wanted if _live_hotplug(disk) and disk.target.dev not in devices]


def _hotplug_or_empty(disk: api.Disk) -> bool:
    return is_hotplug_disk(disk) or not source_path(disk)


def updated_disks(live: Sequence[api.Disk], wanted: Sequence[api.Disk]) -> list[api.Disk]:
    """The live CD-ROMs whose medium (a hotplugged volume, or none) changes: each as the live disk with
    the wanted medium (none when the wanted domain lacks the CD-ROM)."""
    by_device = {disk.target.dev: disk for disk in wanted}
    out = []
    for disk in live:
        new = by_device.get(disk.target.dev)
        if disk.device != "cdrom" or (new is not None and new.device != "cdrom"):
            continue
        if not _hotplug_or_empty(disk) or (new is not None and not _hotplug_or_empty(new)):
            continue
        source = api.DiskSource() if new is None or not source_path(new) else new.source._copy()
        if source == disk.source:
            continue
        updated = disk._copy()
        updated.source = source
        updated.type = "file" if source.file else "block"
        if updated.driver is None:
            updated.driver = api.DiskDriver()
        updated.driver.type = "raw"
        out.append(updated)
    return out


def disk_ready(path: str) -> bool:
    """Whether virt-handler's disk is in place and opens (a device for reading, an image for writing), as
    KubeVirt checks before attaching; missing or unopenable: not yet. Other failures raise ``OSError``."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    flags = os.O_RDONLY if stat.S_ISBLK(mode) or stat.S_ISCHR(mode) else os.O_RDWR
    try:
        fd = os.open(path, flags | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(fd)
    return True


def fit_attached_disk(disk: api.Disk) -> None:
    """The cache and IO modes of a disk about to be attached, from the image as it is now."""
    domain = api.Domain(devices=api.Devices(disks=[disk]))
    facts = probe_devices(domain, NodeFacts())
    choose_disk_cache_modes(domain, facts)
    choose_disk_io_modes(domain, facts)


@dataclasses.dataclass(slots=True)
class DiskSync:
    """What one pass did: ``changed`` the domain, and whether a disk is ``waiting`` for its file."""

    changed: bool = False
    waiting: bool = False


def _describe(disk: api.Disk) -> str:
    return f"disk {volume_name(disk)} (target {disk.target.dev})"


def sync_disks(
    dom: libvirt.virDomain,
    live: Sequence[api.Disk],
    wanted: Sequence[api.Disk],
    log: Any,
    *,
    unplugging: set[str],
) -> DiskSync:
    """Detach, attach and swap the hotplugged disks of ``dom`` so that they are ``wanted``'s. A disk whose
    file is not in the pod yet waits for a later pass. ``unplugging`` holds the devices detached earlier
    that the guest has not let go of yet (a PCI device's unplug completes in the guest, maybe after the
    call returned): they are not detached again, which libvirt refuses. Failures raise
    :class:`LibvirtCallError` naming the disk."""
    result = DiskSync()
    unplugging &= {disk.target.dev for disk in live if disk.target.dev}
    for disk in detached_disks(live, wanted):
        if disk.target.dev in unplugging:
            result.waiting = True
            continue
        log.info("detaching disk", disk=volume_name(disk), target=disk.target.dev)
        _call(f"detaching {_describe(disk)}", dom.detachDeviceFlags, disk)
        if disk.target.dev:
            unplugging.add(disk.target.dev)
        result.changed = True
    for disk in attached_disks(live, wanted):
        if not _ready(disk):
            result.waiting = True
            continue
        fit_attached_disk(disk)
        log.info("attaching disk", disk=volume_name(disk), target=disk.target.dev)
        _call(f"attaching {_describe(disk)}", dom.attachDeviceFlags, disk)
        result.changed = True
    for disk in updated_disks(live, wanted):
        if source_path(disk) and not _ready(disk):
            result.waiting = True
            continue
        log.info("updating disk", disk=volume_name(disk), target=disk.target.dev, source=source_path(disk))
        _call(f"updating {_describe(disk)}", dom.updateDeviceFlags, disk)
        result.changed = True
    return result


def _ready(disk: api.Disk) -> bool:
    path = source_path(disk)
    try:
        return disk_ready(path)
    except OSError as err:
        raise LibvirtCallError(f"checking {_describe(disk)}: {path}: {err.strerror or err}") from err


def _call(action: str, method: Any, disk: api.Disk) -> None:
    try:
        method(disk.to_xml(), LIVE_AND_CONFIG)
    except libvirt.libvirtError as err:
        raise LibvirtCallError(f"{action}: {err.get_error_message() or err}") from err


def hotplugged_volumes(vmi: VMIView) -> list[str]:
    """The VMI's hotplugged volumes: those whose status entry has ``hotplugVolume``."""
    return [str(entry.get("name")) for entry in vmi.volume_statuses() if entry.has("hotplugVolume")]


def sync_key(vmi: VMIView, options: Any, live: Sequence[api.Disk]) -> str:
    """A digest of everything a pass depends on: the VMI's spec and volume statuses, virt-handler's
    options, which hotplugged disks are in the pod, and the live domain's hotplugged disks. While it stays
    the same, a pass that left nothing waiting need not convert the VMI again."""
    statuses = [
        [entry.get("name"), entry.get("phase"), entry.get("target"), entry.has("hotplugVolume")]
        for entry in vmi.volume_statuses()
    ]
    in_pod = [
        [name, _kind(f"{HOTPLUG_DISK_DIR}{name}.img"), _kind(f"{HOTPLUG_DISK_DIR}{name}")]
        for name in hotplugged_volumes(vmi)
    ]
    domain = [[d.target.dev, source_path(d), d.device] for d in live if _hotplug_or_empty(d)]
    document = [vmi.spec.data, statuses, in_pod, domain]
    digest = hashlib.sha256(json.dumps(document, sort_keys=True, default=dict).encode())
    if options is not None:
        digest.update(options.SerializeToString(deterministic=True))
    return digest.hexdigest()


def _kind(path: str) -> int:
    """The file type of ``path`` (0: none)."""
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except OSError:
        return 0
