"""Names and places of hotplugged disks on the node, below the kubelet's pods directory.

Both the launcher pod and the attachment pod have an emptyDir called ``hotplug-disks``: the launcher's
holds ``<volume>.img`` (a Filesystem claim's ``disk.img``, bind-mounted) or ``<volume>`` (a Block claim's
device node) at ``/var/run/kubevirt/hotplug-disks``; the attachment pod's holds the socket its process
serves (``/path/hp.sock``) and, for a Block claim, the device node the container runtime made for its
``volumeDevices`` entry (``/path/<volume>/<claim uid>``).
"""

from __future__ import annotations

from typing import Final

from kubevirt import pod_paths, safepath
from kubevirt.virt_handler.launcher_sockets import EMPTY_DIR

HOTPLUG_DISKS: Final = "hotplug-disks"
ATTACHMENT_SOCKET: Final = "hp.sock"  # the attachment pod runs ``container-disk --copy-path /path/hp``
DISK_IMAGE: Final = "disk.img"  # a Filesystem claim's image, at its top
CSI_PLUGIN: Final = "kubernetes.io~csi"  # the kubelet publishes a CSI volume in <pv>/mount below this
CSI_MOUNT: Final = "mount"
QEMU_USER: Final = 107  # KubeVirt's ownership manager gives the disks to the qemu user and group
# KubeVirt's checkpoint directory: one record per VMI UID, kept across restarts of virt-handler.
MOUNT_STATE_DIR: Final = f"{pod_paths.VIRT_PRIVATE_DIR}/hotplug-volume-mount-state"
_MAX_NAME = 253


class HotplugVolumeError(Exception):
    """A hotplugged volume could not be mounted or unmounted; the message names it and says why."""


def disks_dir(pod_uid: str) -> list[str]:
    """The path components of a pod's ``hotplug-disks`` emptyDir below the kubelet's pods directory."""
    return [pod_uid, "volumes", EMPTY_DIR, HOTPLUG_DISKS]


def target_name(volume: str, *, block: bool) -> str:
    """The volume's name in the launcher's ``hotplug-disks`` volume (what the launcher's domain names)."""
    return volume if block else f"{volume}.img"


def check_name(name: str, what: str) -> str:
    """``name`` when it is one plain path component (a pod UID or a volume name), else the error."""
    if not safepath.plain_name(name) or len(name) > _MAX_NAME:
        raise HotplugVolumeError(f"{name[:80]!r} is not a {what}")
    return name
