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

from kubevirt import cloudinit, config_disk, emptydisk, host_disk, safepath
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
    empty_disk_dir: Path = Path("/var/run/libvirt/empty-disks")
    service_account_dir: Path = Path("/var/run/secrets/kubernetes.io/serviceaccount")

    @property
    def host_disk_dir(self) -> Path:
        return self.private_dir / "vmi-disks"

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
        steps += self._empty_disk_steps(vmi)
        steps += self._host_disk_steps(vmi)
        steps += self._config_disk_steps(vmi)
        self._check_kernel_boot(vmi)
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

    # -- emptyDisk, hostDisk ------------------------------------------------------------------------

    def _empty_disk_steps(self, vmi: Mapping[str, Any]) -> list[Step]:
        steps: list[Step] = []
        for index, volume in volumes(vmi):
            source = volume.get("emptyDisk")
            if source is None:
                continue
            field = f"spec.volumes[{index}].emptyDisk"
            name = volume["name"]
            capacity = _quantity(_mapping(source, field).get("capacity"), f"{field}.capacity")
            try:
                size = emptydisk.image_size(capacity, name, f"{field}.capacity")
            except emptydisk.EmptyDiskError as err:
                raise StoragePreparationError(str(err)) from None
            steps.append(self._empty_disk_step(name, size, field))
        return steps

    def _empty_disk_step(self, name: str, size: int, field: str) -> Step:
        def make() -> None:
            try:
                made = emptydisk.create(self._dirs.empty_disk_dir, name, size)
            except (ValueError, DiskImageError, OSError) as err:
                raise StoragePreparationError(f"{field}: creating empty disks failed: {err}") from None
            if made:
                self._log.info("empty disk created", volume=name, size=size)

        return make

    def _host_disk_steps(self, vmi: Mapping[str, Any]) -> list[Step]:
        steps: list[Step] = []
        for index, volume in volumes(vmi):
            source = volume.get("hostDisk")
            if source is None:
                continue
            field = f"spec.volumes[{index}].hostDisk"
            source = _mapping(source, field)
            path = source.get("path")
            if not isinstance(path, str) or not path:
                raise StoragePreparationError(f"{field}.path: required")
            capacity = _quantity(source.get("capacity"), f"{field}.capacity")
            name = volume["name"]
            try:
                size = host_disk.plan(
                    self._dirs.host_disk_dir, name, path, str(source.get("type") or ""), capacity, field
                )
            except host_disk.HostDiskError as err:
                raise StoragePreparationError(str(err)) from None
            if size is not None:
                steps.append(self._host_disk_step(name, path, size, capacity, field))
        return steps

    def _host_disk_step(self, name: str, path: str, size: int, requested: int, field: str) -> Step:
        def make() -> None:
            try:
                made = host_disk.create(self._dirs.host_disk_dir, name, path, size, field)
            except (host_disk.HostDiskError, OSError) as err:
                raise StoragePreparationError(f"{field}: creating the host disk failed: {err}") from None
            if made and size < requested:
                self._log.warning(
                    "PV size too small: using it anyway, it is within the toleration",
                    volume=name,
                    size=size,
                    requested=requested,
                )
            elif made:
                self._log.info("host disk created", volume=name, size=size)

        return make

    # -- configMap, secret, downwardAPI, serviceAccount ----------------------------------------------

    def _config_disk_steps(self, vmi: Mapping[str, Any]) -> list[Step]:
        """An ISO for each config volume a disk uses (as KubeVirt, a volume without a disk gets none)."""
        devices = ((vmi.get("spec") or {}).get("domain") or {}).get("devices") or {}
        with_disk = {disk.get("name") for disk in devices.get("disks") or [] if isinstance(disk, Mapping)}
        steps: list[Step] = []
        for index, volume in volumes(vmi):
            for kind in config_disk.KINDS:
                source = volume.get(kind.key)
                if source is None or volume["name"] not in with_disk:
                    continue
                field = f"spec.volumes[{index}].{kind.key}"
                label = _mapping(source, field).get("volumeLabel") or ""
                if not isinstance(label, str):
                    raise StoragePreparationError(f"{field}.volumeLabel: must be a string")
                steps.append(self._config_disk_step(kind, volume["name"], label, field))
        return steps

    def _config_disk_step(self, kind: config_disk.Kind, name: str, label: str, field: str) -> Step:
        dirs = self._dirs
        source = config_disk.source_path(dirs.private_dir, dirs.service_account_dir, kind, name)
        path = config_disk.iso_path(dirs.private_dir, kind, name)

        def make() -> None:
            try:
                config_disk.write(path, label, config_disk.read_files(source))
            except (ValueError, OSError) as err:
                raise StoragePreparationError(
                    f"{field}: creating the {kind.key} disk failed: {err}"
                ) from None
            self._log.info("config disk written", volume=name, kind=kind.key, path=str(path))

        return make

    # -- kernel boot -------------------------------------------------------------------------------

    def _check_kernel_boot(self, vmi: Mapping[str, Any]) -> None:
        """The kernel and initrd virt-handler mounted must be plain files (missing ones QEMU reports)."""
        firmware = ((vmi.get("spec") or {}).get("domain") or {}).get("firmware") or {}
        container = ((firmware.get("kernelBoot") or {}) if isinstance(firmware, Mapping) else {}).get(
            "container"
        )
        if not isinstance(container, Mapping):
            return
        for key in ("kernelPath", "initrdPath"):
            artifact = container.get(key)
            if not artifact or not isinstance(artifact, str):
                continue
            path = container_disk.kernel_boot_artifact_path(self._dirs.container_disk_dir, artifact)
            if not path.parent.is_dir():
                continue  # not mounted here (yet): QEMU names the missing file
            try:
                container_disk.require_regular_file(path.parent, path.name)
            except DiskImageError as err:
                raise StoragePreparationError(
                    f"spec.domain.firmware.kernelBoot.container.{key}: {err}"
                ) from None


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise StoragePreparationError(f"{field}: must be an object")
    return value


def _quantity(value: Any, field: str) -> int:
    """A Kubernetes quantity in bytes (0 when absent)."""
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        quantity_bytes = value
    else:
        # Imported here: the typed API is heavy, and most VMIs size no disk.
        from kubevirt_api.resource import Quantity

        try:
            quantity_bytes = Quantity(str(value)).value()
        except ValueError as err:
            raise StoragePreparationError(f"{field}: not a quantity: {str(value)[:80]!r}") from err
    if quantity_bytes < 0:
        raise StoragePreparationError(f"{field}: must not be negative")
    return quantity_bytes


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
