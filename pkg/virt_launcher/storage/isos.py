"""ISO images in the pod: the cloud-init data source and the config volumes' disks.

The data is read and checked when the steps are planned (a bad value refuses the request before any
file is written); the steps write the images.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubevirt import cloudinit, config_disk, safepath
from kubevirt.virt_launcher.storage.request import Step, StorageDirs, names, nested, sources
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError


def cloud_init_steps(dirs: StorageDirs, vmi: Mapping[str, Any], log: Any) -> list[Step]:
    try:
        data = cloudinit.read_volume_data(vmi, dirs.secret_dir)
    except cloudinit.CloudInitError as err:
        raise StoragePreparationError(str(err)) from None
    if data is None:
        return []
    metadata = nested(vmi, "metadata")
    name, namespace = str(metadata.get("name", "")), str(metadata.get("namespace") or "default")
    if not (safepath.plain_name(name) and safepath.plain_name(namespace)):
        raise StoragePreparationError("metadata.name: not usable as a directory name")
    path = cloudinit.iso_path(dirs.cloud_init_dir, data.data_source, name, namespace)

    def write() -> None:
        try:
            cloudinit.write_iso_image(data, path)
        except (ValueError, OSError) as err:
            raise StoragePreparationError(
                f"spec.volumes: generating the cloud-init {data.data_source} image of volume "
                f"{data.volume_name} failed: {err}"
            ) from None
        log.info("cloud-init image written", volume=data.volume_name, path=str(path))

    return [write]


def config_disk_steps(dirs: StorageDirs, vmi: Mapping[str, Any], log: Any) -> list[Step]:
    """An ISO for each config volume a disk uses (as in KubeVirt, a volume without a disk gets none),
    and for each sysprep volume."""
    with_disk = names(vmi, "spec.domain.devices.disks", "spec", "domain", "devices", "disks")
    steps: list[Step] = []
    for kind in config_disk.KINDS:
        for _, name, source, field in sources(vmi, kind.key):
            if name not in with_disk:
                continue
            label = source.get("volumeLabel") or ""
            if not isinstance(label, str):
                raise StoragePreparationError(f"{field}.volumeLabel: must be a string")
            steps.append(_config_disk_step(dirs, kind, name, label, field, log))
    for _, name, source, field in sources(vmi, config_disk.SYSPREP.key):
        if source.get("configMap") is not None or source.get("secret") is not None:
            steps.append(
                _config_disk_step(dirs, config_disk.SYSPREP, name, config_disk.SYSPREP_LABEL, field, log)
            )
    return steps


def _config_disk_step(
    dirs: StorageDirs, kind: config_disk.Kind, name: str, label: str, field: str, log: Any
) -> Step:
    source = config_disk.source_path(dirs.private_dir, dirs.service_account_dir, kind, name)
    path = config_disk.iso_path(dirs.private_dir, kind, name)
    try:
        files = config_disk.read_files(source)
        if kind is config_disk.SYSPREP:
            config_disk.check_unattend(files)
    except config_disk.ConfigDiskError as err:
        raise StoragePreparationError(f"{field}: creating the {kind.key} disk failed: {err}") from None

    def make() -> None:
        try:
            config_disk.write(path, label, files)
        except (ValueError, OSError) as err:
            raise StoragePreparationError(f"{field}: creating the {kind.key} disk failed: {err}") from None
        log.info("config disk written", volume=name, kind=kind.key, path=str(path))

    return make
