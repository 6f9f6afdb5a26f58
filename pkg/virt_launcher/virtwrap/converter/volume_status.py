"""What the VMI's ``status.volumeStatus`` tells the disk configurator: which volumes are hotplugged and
whether their disk is in the pod yet, which guest device each volume already has, and where a hotplugged
volume's disk appears in the launcher pod.

A volume is hotplugged when its status entry has ``hotplugVolume``. virt-handler puts its disk into the
pod (``/var/run/kubevirt/hotplug-disks``); the domain gets the disk only once virt-handler reports it
mounted (``MountedToPod``) or the guest has it (``Ready``), as in KubeVirt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubevirt import pod_paths
from kubevirt_api.core.v1 import VirtualMachineInstance, VolumeStatus
from kubevirt_api.core.v1.volumes import VolumePhase

# The phases in which a hotplugged volume's disk is in the pod, ready for the domain.
HOTPLUG_READY_PHASES = frozenset({VolumePhase.HOTPLUG_VOLUME_MOUNTED, VolumePhase.VOLUME_READY})


def hotplug_filesystem_path(volume: str) -> str:
    """Where a hotplugged filesystem volume's image appears in the pod (KubeVirt's
    ``GetHotplugFilesystemVolumePath``)."""
    return f"{pod_paths.HOTPLUG_DISK_DIR}/{volume}.img"


def hotplug_block_path(volume: str) -> str:
    """Where a hotplugged block volume's device node appears in the pod (KubeVirt's
    ``GetHotplugBlockDeviceVolumePath``)."""
    return f"{pod_paths.HOTPLUG_DISK_DIR}/{volume}"


@dataclass(frozen=True, slots=True)
class VolumeStatuses:
    """The VMI's volume statuses by volume name (a repeated name: the last entry, as KubeVirt's map)."""

    hotplug: Mapping[str, VolumeStatus]
    permanent: frozenset[str]
    targets: Mapping[str, str]

    @classmethod
    def of(cls, vmi: VirtualMachineInstance) -> VolumeStatuses:
        entries = (vmi.status.volume_status if vmi.status else None) or []
        by_name = {entry.name: entry for entry in entries}
        return cls(
            hotplug={name: e for name, e in by_name.items() if e.hotplug_volume is not None},
            permanent=frozenset(name for name, e in by_name.items() if e.hotplug_volume is None),
            # Names the guest already knows keep their device (virt-handler copies them from the domain).
            targets={entry.name: entry.target for entry in entries if entry.target},
        )

    def in_domain(self, volume: str, *, empty_cdrom: bool) -> bool:
        """Whether the disk of ``volume`` belongs in the domain now: a permanent volume always (every
        volume while the VMI has no permanent status yet), a hotplugged one once its disk is in the pod."""
        if empty_cdrom or volume in self.permanent or not self.permanent:
            return True
        entry = self.hotplug.get(volume)
        return entry is not None and entry.phase in HOTPLUG_READY_PHASES
