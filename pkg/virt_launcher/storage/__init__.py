"""The files a VMI's disks need inside the launcher pod, made before its domain is defined.

The converter points every disk at a path in the pod (see ``converter/disks.py``); this package makes
sure something is there: containerDisk overlays, cloud-init ISOs, empty disks, config-volume ISOs, and
that host disks and PVC ``disk.img`` (virt-handler's to make) and kernel-boot artifacts are plain files
(or block devices) reached through no symlink. Each request is checked
whole before anything is written, so bad input leaves nothing behind; errors name the VMI field. Images
that exist are kept: a resync or a restarted launcher must not wipe what a guest wrote.
"""

from __future__ import annotations

import threading

from kubevirt.container_disk import images as container_disk
from kubevirt.ephemeral_disk import DEFAULT_INFO_MEMORY_LIMIT, DiskImageError, DiskInfo
from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT
from kubevirt.virt_launcher.storage import images, isos
from kubevirt.virt_launcher.storage.request import Step, StorageDirs, sources, storage_view
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError
from kubevirt_api.view import VMIView

__all__ = ["PodStorage", "StorageDirs"]


class PodStorage:
    """Prepares one launcher pod's disks; remembers each containerDisk image's description."""

    def __init__(self, dirs: StorageDirs, *, disk_memory_limit: int = DEFAULT_INFO_MEMORY_LIMIT) -> None:
        self._dirs = dirs
        self._memory_limit = disk_memory_limit or DEFAULT_INFO_MEMORY_LIMIT
        self._disks_info: dict[str, DiskInfo] = {}
        self._lock = threading.Lock()
        self._log = get_logger(component=COMPONENT)

    def disks_info(self, vmi: VMIView) -> dict[str, DiskInfo]:
        """Each containerDisk image's description (``qemu-img info``), for the converter's backing store."""
        return self._container_disks_info(storage_view(vmi))

    def block_volumes(self, vmi: VMIView) -> frozenset[str]:
        """The PVC and DataVolume volumes the pod has as block devices, for the converter."""
        return images.block_volumes(self._dirs, storage_view(vmi))

    def prepare(self, vmi: VMIView) -> None:
        """Make every disk's file; checks all input first, so a bad request writes nothing."""
        vmi = storage_view(vmi)
        dirs, log = self._dirs, self._log
        formats = {name: info.format for name, info in self._container_disks_info(vmi).items()}
        steps: list[Step] = [
            *isos.cloud_init_steps(dirs, vmi, log),
            *images.overlay_steps(dirs, vmi, formats, log),
            *images.empty_disk_steps(dirs, vmi, log),
            *isos.config_disk_steps(dirs, vmi, log),
        ]
        images.check_host_disks(dirs, vmi)
        images.check_kernel_boot(dirs, vmi)
        for step in steps:
            step()

    def _container_disks_info(self, vmi: VMIView) -> dict[str, DiskInfo]:
        with self._lock:
            for index, name, _ in sources(vmi, "containerDisk"):
                if name in self._disks_info:
                    continue
                try:
                    info = container_disk.image_info(
                        self._dirs.container_disk_dir, index, memory_limit=self._memory_limit
                    )
                except DiskImageError as err:
                    raise StoragePreparationError(
                        f"spec.volumes[{index}].containerDisk: invalid image in containerDisk {name}: {err}"
                    ) from None
                self._disks_info[name] = info
            return dict(self._disks_info)
