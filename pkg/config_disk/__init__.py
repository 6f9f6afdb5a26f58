"""configMap, secret, downwardAPI, serviceAccount and sysprep volumes given to the guest as ISO images.

The kubelet mounts each such volume in the pod (KubeVirt's paths: ``/var/run/kubevirt-private/
{config-map,secret,downwardapi}/<volume>/`` and the service account's token directory); the image
holds the same files, labelled with the volume's ``volumeLabel`` (``cfgdata`` without one). The
kubelet's layout is followed inside the volume (``key -> ..data/key``) but never out of it, and its
own ``..``-entries are left out. The content is bounded like the objects it comes from. A sysprep
volume (a ConfigMap or Secret at ``/var/run/kubevirt-private/sysprep/<volume>/``) must hold Windows'
``autounattend.xml`` or ``unattend.xml`` and is labelled ``unattendCD``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from kubevirt import pod_paths, safepath
from kubevirt.isoimage import write_iso

DEFAULT_LABEL = "cfgdata"
SERVICE_ACCOUNT_ISO = "service-account.iso"
SYSPREP_LABEL = "unattendCD"
UNATTEND_FILES = ("autounattend.xml", "unattend.xml")
# A ConfigMap or Secret holds at most 1 MiB; a few times that covers any projection of them.
MAX_TOTAL_BYTES = 4 * 1024 * 1024
MAX_FILES = 1024
MAX_DEPTH = 8


class ConfigDiskError(ValueError):
    """The volume's files cannot become an image; the message says why."""


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of config volume: the VolumeSource key, where the kubelet mounts it, where the image goes."""

    key: str
    source_dir: str
    disk_dir: str


CONFIG_MAP = Kind("configMap", pod_paths.CONFIG_MAP, pod_paths.CONFIG_MAP_DISKS)
SECRET = Kind("secret", pod_paths.SECRET, pod_paths.SECRET_DISKS)
DOWNWARD_API = Kind("downwardAPI", pod_paths.DOWNWARD_API, pod_paths.DOWNWARD_API_DISKS)
SERVICE_ACCOUNT = Kind("serviceAccount", "", pod_paths.SERVICE_ACCOUNT_DISK)
SYSPREP = Kind("sysprep", pod_paths.SYSPREP, pod_paths.SYSPREP_DISKS)
KINDS = (CONFIG_MAP, SECRET, DOWNWARD_API, SERVICE_ACCOUNT)  # each made only for a volume a disk uses


def iso_path(private_dir: Path, kind: Kind, volume_name: str) -> Path:
    name = SERVICE_ACCOUNT_ISO if kind is SERVICE_ACCOUNT else f"{volume_name}.iso"
    return private_dir / kind.disk_dir / name


def source_path(private_dir: Path, service_account_dir: Path, kind: Kind, volume_name: str) -> Path:
    return service_account_dir if kind is SERVICE_ACCOUNT else private_dir / kind.source_dir / volume_name


def read_files(source: Path) -> dict[str, bytes]:
    """The volume's files (``dir/name`` -> content), resolved inside the volume only."""
    try:
        root = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        raise ConfigDiskError(f"the volume is not mounted at {source}: {err.strerror}") from None
    files: dict[str, bytes] = {}
    try:
        _collect(root, "", files, [0], depth=0)
    finally:
        os.close(root)
    return files


def check_unattend(files: dict[str, bytes]) -> None:
    """A sysprep volume's files must include Windows setup's answer file."""
    if not any(name.lower() in UNATTEND_FILES for name in files):
        raise ConfigDiskError(
            "Sysprep drive should contain autounattend.xml or unattend.xml but neither were found."
        )


def write(path: Path, label: str, files: dict[str, bytes]) -> None:
    write_iso(path, label or DEFAULT_LABEL, files)


def _collect(root: int, directory: str, files: dict[str, bytes], total: list[int], *, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ConfigDiskError(f"{directory}: nested deeper than {MAX_DEPTH} directories")
    with _opened(root, directory or ".", os.O_RDONLY | os.O_DIRECTORY) as fd:
        names = sorted(os.listdir(fd))
    for name in names:
        if name.startswith(".."):
            continue  # the kubelet's bookkeeping (..data and its timestamped target)
        relative = f"{directory}/{name}" if directory else name
        with _opened(root, relative, os.O_RDONLY | os.O_NONBLOCK) as fd:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                kind = "dir"
            elif stat.S_ISREG(info.st_mode):
                kind = "file"
                if len(files) >= MAX_FILES:
                    raise ConfigDiskError(f"more than {MAX_FILES} files")
                total[0] += info.st_size
                if total[0] > MAX_TOTAL_BYTES:
                    raise ConfigDiskError(f"more than {MAX_TOTAL_BYTES} bytes of files")
                files[relative] = _read_all(fd, info.st_size)
            else:
                continue  # sockets, fifos, devices: nothing a config object holds
        if kind == "dir":
            _collect(root, relative, files, total, depth=depth + 1)


def _read_all(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    read = 0
    while chunk := os.read(fd, size + 1 - read):
        chunks.append(chunk)
        read += len(chunk)
        if read > size:
            raise ConfigDiskError("a file grew while it was read")
    return b"".join(chunks)


@contextlib.contextmanager
def _opened(root: int, path: str, flags: int) -> Iterator[int]:
    """A file descriptor for ``path`` inside ``root`` (symlinks resolved in the volume, never out)."""
    try:
        fd = safepath.openat2(root, path, flags, resolve=safepath.IN_ROOT)
    except OSError as err:
        raise ConfigDiskError(f"{path}: {err.strerror}") from None
    try:
        yield fd
    finally:
        os.close(fd)
