"""The files a VMI's disks need inside the launcher pod, made before its domain is defined.

The converter points every disk at a path in the pod (see ``converter/disks.py``); this module makes
sure something is there: containerDisk overlays, cloud-init ISOs, empty disks, host disks, config disks,
and that kernel-boot artifacts are in place. Each request is checked whole before anything is written,
so bad input leaves nothing behind; errors name the VMI field. Overlays and disks that exist are kept:
a resync or a restarted launcher must not wipe what a guest wrote. The VMI is read from the request's
JSON, as the rest of the long-lived launcher does (the typed API stays in the conversion worker).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubevirt import cloudinit, safepath
from kubevirt.container_disk import images as container_disk
from kubevirt.ephemeral_disk import DEFAULT_INFO_MEMORY_LIMIT, DiskImageError, DiskInfo
from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError

Step = Callable[[], None]


@dataclasses.dataclass(frozen=True)
class StorageDirs:
    """Where the pod's volumes are, in the launcher's view (KubeVirt's paths by default)."""

    container_disk_dir: Path = Path("/var/run/kubevirt/container-disks")
    ephemeral_disk_dir: Path = Path("/var/run/kubevirt-ephemeral-disks")
    private_dir: Path = Path("/var/run/kubevirt-private")

    @property
    def cloud_init_dir(self) -> Path:
        return self.ephemeral_disk_dir / "cloud-init-data"

    @property
    def secret_dir(self) -> Path:
        return self.private_dir / "secret"


def volumes(vmi: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """``spec.volumes`` with their indexes; a volume whose name is no plain file name is refused."""
    out = []
    for index, volume in enumerate((vmi.get("spec") or {}).get("volumes") or []):
        if not isinstance(volume, Mapping):
            raise StoragePreparationError(f"spec.volumes[{index}]: must be an object")
        name = volume.get("name")
        if not isinstance(name, str) or not safepath.plain_name(name):
            raise StoragePreparationError(
                f"spec.volumes[{index}].name: {str(name)[:80]!r} is not a volume name"
            )
        out.append((index, volume))
    return out


class PodStorage:
    """Prepares one launcher pod's disks; remembers each containerDisk image's description."""

    def __init__(self, dirs: StorageDirs, *, disk_memory_limit: int = DEFAULT_INFO_MEMORY_LIMIT) -> None:
        self._dirs = dirs
        self._memory_limit = disk_memory_limit or DEFAULT_INFO_MEMORY_LIMIT
        self._disks_info: dict[str, DiskInfo] = {}
        self._lock = threading.Lock()
        self._log = get_logger(component=COMPONENT)

    def disks_info(self, raw_vmi: bytes) -> dict[str, DiskInfo]:
        """Each containerDisk image's description (``qemu-img info``), for the converter's backing store."""
        return self._container_disks_info(_load(raw_vmi))

    def _container_disks_info(self, vmi: Mapping[str, Any]) -> dict[str, DiskInfo]:
        with self._lock:
            for index, volume in volumes(vmi):
                name = volume["name"]
                if volume.get("containerDisk") is None or name in self._disks_info:
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

    def prepare(self, raw_vmi: bytes) -> None:
        """Make every disk's file; checks all input first, so a bad request writes nothing."""
        vmi = _load(raw_vmi)
        steps: list[Step] = []
        steps += self._cloud_init_steps(vmi)
        steps += self._container_disk_steps(vmi)
        for step in steps:
            step()

    # -- containerDisk -----------------------------------------------------------------------------

    def _container_disk_steps(self, vmi: Mapping[str, Any]) -> list[Step]:
        infos = self._container_disks_info(vmi)
        steps: list[Step] = []
        for index, volume in volumes(vmi):
            if volume.get("containerDisk") is None:
                continue
            name = volume["name"]
            steps.append(self._overlay_step(index, name, infos[name].format))
        return steps

    def _overlay_step(self, index: int, name: str, image_format: str) -> Step:
        def make() -> None:
            try:
                made = container_disk.create_overlay(
                    self._dirs.ephemeral_disk_dir, self._dirs.container_disk_dir, name, index, image_format
                )
            except DiskImageError as err:
                raise StoragePreparationError(
                    f"spec.volumes[{index}].containerDisk: preparing ephemeral container disk images "
                    f"failed: {err}"
                ) from None
            if made:
                self._log.info("containerDisk overlay created", volume=name, backing_format=image_format)

        return make

    # -- cloud-init --------------------------------------------------------------------------------

    def _cloud_init_steps(self, vmi: Mapping[str, Any]) -> list[Step]:
        try:
            data = cloudinit.read_volume_data(vmi, self._dirs.secret_dir)
        except cloudinit.CloudInitError as err:
            raise StoragePreparationError(str(err)) from None
        if data is None:
            return []
        metadata = vmi.get("metadata") or {}
        name, namespace = str(metadata.get("name", "")), str(metadata.get("namespace") or "default")
        if not (safepath.plain_name(name) and safepath.plain_name(namespace)):
            raise StoragePreparationError("metadata.name: not usable as a directory name")
        path = cloudinit.iso_path(self._dirs.cloud_init_dir, data.data_source, name, namespace)

        def write() -> None:
            try:
                cloudinit.write_iso_image(data, path)
            except (ValueError, OSError) as err:
                raise StoragePreparationError(
                    f"spec.volumes: generating the cloud-init {data.data_source} image of volume "
                    f"{data.volume_name} failed: {err}"
                ) from None
            self._log.info("cloud-init image written", volume=data.volume_name, path=str(path))

        return [write]


def _load(raw_vmi: bytes) -> Mapping[str, Any]:
    if not raw_vmi:
        return {}  # a request without a VMI has no volumes (the command itself reports the VMI missing)
    try:
        vmi = json.loads(raw_vmi)
    except ValueError as err:
        raise StoragePreparationError(f"vmi: malformed VMI JSON: {err}") from None
    if not isinstance(vmi, Mapping):
        raise StoragePreparationError("vmi: the VMI JSON must be an object")
    return vmi
