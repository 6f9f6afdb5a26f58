"""Reading a request's VMI for the pod's storage: volumes by kind, quantities, where the volumes are.

The long-lived launcher reads the request's :class:`VMIView` instead of the typed API (which stays in the
conversion worker); a bad field is a :class:`StoragePreparationError` naming it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from kubevirt import pod_paths, safepath
from kubevirt.view_quantity import quantity
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError
from kubevirt_api.view import View, VMIView

__all__ = ["Step", "StorageDirs", "hotplugged", "names", "quantity", "sources", "storage_view", "volumes"]

Step = Callable[[], None]  # one file to make, after the whole request was checked


@dataclasses.dataclass(frozen=True)
class StorageDirs:
    """Where the pod's volumes are, in the launcher's view (KubeVirt's paths by default)."""

    container_disk_dir: Path = Path(pod_paths.CONTAINER_DISK_DIR)
    ephemeral_disk_dir: Path = Path(pod_paths.EPHEMERAL_DISK_DIR)
    private_dir: Path = Path(pod_paths.VIRT_PRIVATE_DIR)
    empty_disk_dir: Path = Path(pod_paths.EMPTY_DISK_DIR)  # in libvirt's runtime directory
    service_account_dir: Path = Path("/var/run/secrets/kubernetes.io/serviceaccount")
    block_device_dir: Path = Path("/dev")
    hotplug_disk_dir: Path = Path(pod_paths.HOTPLUG_DISK_DIR)  # virt-handler's, for hotplugged volumes

    @property
    def host_disk_dir(self) -> Path:
        return self.private_dir / pod_paths.VMI_DISKS

    @property
    def cloud_init_dir(self) -> Path:
        return self.ephemeral_disk_dir / pod_paths.CLOUD_INIT_DATA

    @property
    def secret_dir(self) -> Path:
        return self.private_dir / pod_paths.SECRET


def storage_view(vmi: VMIView) -> VMIView:
    """The request's VMI, its bad fields reported as :class:`StoragePreparationError`."""
    return VMIView(vmi.data, vmi.path, error=StoragePreparationError)


def volumes(vmi: VMIView) -> list[View]:
    """``spec.volumes``; a volume whose name is no plain file name is refused."""
    out = vmi.volumes()
    for volume in out:
        name = volume.get("name")
        if not isinstance(name, str) or not safepath.plain_name(name):
            raise volume.fail("name", f"{str(name)[:80]!r} is not a volume name")
    return out


def sources(vmi: VMIView, kind: str) -> list[tuple[int, str, View]]:
    """Each volume with a ``kind`` source: its index in ``spec.volumes``, its name and that source (whose
    ``path`` is the source's field path)."""
    return [
        (index, str(volume.get("name")), volume.object(kind))
        for index, volume in enumerate(volumes(vmi))
        if volume.has(kind)
    ]


def hotplugged(vmi: VMIView) -> set[str]:
    """The hotplugged volumes (a status entry with ``hotplugVolume``): virt-handler provides their disks,
    so the pod's storage makes nothing for them."""
    return {str(entry.get("name")) for entry in vmi.volume_statuses() if entry.has("hotplugVolume")}


def names(entries: list[View]) -> set[str]:
    """The ``name`` of each entry."""
    return {str(entry.get("name")) for entry in entries}
