"""ISO images in the pod: the cloud-init data source and the config volumes' disks.

The data is read and checked when the steps are planned (a bad value refuses the request before any
file is written); the steps write the images.
"""

from __future__ import annotations

from typing import Any

from kubevirt import cloudinit, config_disk, safepath
from kubevirt.virt_launcher.storage.request import Step, StorageDirs, names, sources
from kubevirt.virt_launcher.virtwrap.errors import StoragePreparationError
from kubevirt_api.view import VMIView


def cloud_init_steps(dirs: StorageDirs, vmi: VMIView, log: Any) -> list[Step]:
    try:
        data = cloudinit.read_volume_data(vmi.data, dirs.secret_dir)
    except cloudinit.CloudInitError as err:
        raise StoragePreparationError(str(err)) from None
    if data is None:
        return []
    name, namespace = vmi.name, vmi.namespace
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


def config_disk_steps(dirs: StorageDirs, vmi: VMIView, log: Any) -> list[Step]:
    """An ISO for each config volume a disk uses (as in KubeVirt, a volume without a disk gets none),
    and for each sysprep volume."""
    with_disk = names(vmi.disks())
    steps: list[Step] = []
    for kind in config_disk.KINDS:
        for _, name, source in sources(vmi, kind.key):
            if name not in with_disk:
                continue
            label = source.string("volumeLabel")
            steps.append(_config_disk_step(dirs, kind, name, label, source.path, log))
    for _, name, source in sources(vmi, config_disk.SYSPREP.key):
        if source.has("configMap") or source.has("secret"):
            steps.append(
                _config_disk_step(
                    dirs, config_disk.SYSPREP, name, config_disk.SYSPREP_LABEL, source.path, log
                )
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
