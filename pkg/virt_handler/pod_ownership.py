"""What a non-root launcher opens in its pod, given to the launcher's user before its domain is defined.

A VMI with ``status.runtimeUser`` (107 by default) runs libvirt and QEMU as that user, while the container
runtime and the kubelet make the pod's device nodes and volumes as root. As KubeVirt's handler does before
the first sync (and on a migration target before the incoming domain is prepared), virt-handler gives that
user, through the pod's root:

- ``/dev/kvm`` when the pod has it (not under emulation), ``/dev/vhost-vsock`` when ``autoattachVSOCK``;
- ``/dev/vhost-net`` for a VMI with a virtio interface, when the pod has it (not under emulation), and
  ``/dev/net/tun`` unless the VMI has no interface and attaches no pod interface;
- each hostDisk's image (virt-handler made the ``DiskOrCreate`` ones just before, see :mod:`.host_disks`);
  a filesystem PVC or DataVolume counts as the ``DiskOrCreate`` hostDisk ``disk.img`` KubeVirt turns it
  into;
- ``/dev/<volume>`` of each block-mode PVC.

No link is followed: what is changed is opened with symlinks refused from the pod's root (``/dev``) or
from ``vmi-disks`` (found in the pod's root, where ``/var/run`` may link to ``/run``), with ``O_PATH`` so
that a device is not opened for real, and that descriptor itself is changed. The device nodes are the
container's own (its ``/dev``), so nothing outside the pod changes. Root VMIs are left alone.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubevirt import host_disk, pod_paths, safepath
from kubevirt.podroot import PodRoot
from kubevirt.virt_handler.pod_sockets import PodSocketError, launcher_root
from kubevirt_api.core.v1.constants import DEPRECATED_NON_ROOT_VMI_ANNOTATION
from kubevirt_api.view import View, VMIView

# KubeVirt's qemu user: a VMI marked non-root by the old annotation alone runs as it, and the disk images
# virt-handler makes are its (see .host_disks).
QEMU_USER = 107
_MAX_ID = 2**32 - 2  # (uid_t)-1 means "leave unchanged" to chown
_AT_EMPTY_PATH = 0x1000  # include/uapi/linux/fcntl.h

_libc = ctypes.CDLL(None, use_errno=True)
_libc.fchownat.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_int)


class PodOwnershipError(Exception):
    """Something the launcher needs could not be given to its user; the message names it."""


@dataclass(frozen=True)
class _Device:
    path: str  # below the pod's root, e.g. "dev/net/tun"
    required: bool
    block: bool = False
    field: str = ""  # the volume it stands for, if any
    guessed: bool = False  # a block volume only if a block device is there: skipped otherwise


def _view(vmi: Mapping[str, Any]) -> VMIView:
    return VMIView(vmi, error=PodOwnershipError)


def runtime_user(vmi: Mapping[str, Any]) -> int | None:
    """The user the VMI's launcher runs as when it is not root (KubeVirt's ``IsNonRootVMI``), else None."""
    view = _view(vmi)
    user = view.status.integer("runtimeUser", minimum=0, maximum=_MAX_ID)
    if user == 0 and DEPRECATED_NON_ROOT_VMI_ANNOTATION in view.metadata.object("annotations"):
        return QEMU_USER
    return user or None


def _devices(vmi: Mapping[str, Any]) -> tuple[list[_Device], list[_Device]]:
    """KubeVirt's devices and their conditions: the hypervisor's (``setupDevicesOwnerships``) and the
    network's (``prepareNetwork``)."""
    devices = _view(vmi).devices
    interfaces = devices.items("interfaces")
    auto_pod = devices.optional_boolean("autoattachPodInterface")
    hypervisor = [_Device("dev/kvm", required=False)]
    if devices.boolean("autoattachVSOCK"):
        hypervisor.append(_Device("dev/vhost-vsock", required=True))
    network = []
    if any(iface.get("model") in (None, "", "virtio") for iface in interfaces):
        network.append(_Device("dev/vhost-net", required=False))
    if interfaces or auto_pod is not False:
        network.append(_Device("dev/net/tun", required=True))
    return hypervisor, network


def _volumes(vmi: Mapping[str, Any]) -> tuple[list[_Device], list[host_disk.HostDiskImage]]:
    """Block PVC devices and host disk images (``prepareStorage``, with filesystem claims taken for the
    hostDisks ``ReplacePVCByHostDisk`` makes of them: :func:`kubevirt.host_disk.images`)."""
    view = _view(vmi)
    statuses = {entry.get("name"): entry for entry in view.volume_statuses()}
    blocks: list[_Device] = []
    for volume in view.volumes():
        name = volume.get("name")
        if not isinstance(name, str) or not safepath.plain_name(name):
            raise volume.fail("name", f"{str(name)[:80]!r} is not a volume name")
        if not volume.has("persistentVolumeClaim"):
            continue
        info = statuses.get(name, View({})).object("persistentVolumeClaimInfo")
        if info.get("volumeMode") == "Block" or not info:
            # Without the claim's status (virt-controller writes it) the pod's /dev tells a block one.
            field = volume.at("persistentVolumeClaim")
            blocks.append(_Device(f"dev/{name}", required=False, block=True, field=field, guessed=not info))
    try:
        disks = host_disk.images(view)
    except host_disk.HostDiskError as err:
        raise PodOwnershipError(str(err)) from None
    return blocks, disks


def _chown(fd: int, user: int) -> bool:
    """Gives the file ``fd`` names (an ``O_PATH`` descriptor) to ``user``; whether it changed."""
    info = os.fstat(fd)
    if (info.st_uid, info.st_gid) == (user, user):
        return False
    if _libc.fchownat(fd, b"", user, user, _AT_EMPTY_PATH) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return True


def _open(dir_fd: int, path: str) -> int | None:
    """An ``O_PATH`` descriptor of ``path`` below ``dir_fd``, no symlink followed; None when absent."""
    try:
        return safepath.openat2(dir_fd, path, os.O_PATH, resolve=safepath.NO_SYMLINKS)
    except FileNotFoundError:
        return None


def _give_device(root_fd: int, device: _Device, user: int) -> bool:
    where = f"/{device.path}" + (f" ({device.field})" if device.field else "")
    try:
        fd = _open(root_fd, device.path)
        if fd is None:
            if device.required:
                raise PodOwnershipError(f"failed to set up file ownership for {where}: not in the pod")
            return False  # absent where KubeVirt tolerates it: emulation, or no block device
        try:
            mode = os.fstat(fd).st_mode
            if device.guessed and not stat.S_ISBLK(mode):
                return False  # /dev/<volume> is something else: the claim is a filesystem one
            if not (stat.S_ISBLK(mode) if device.block else stat.S_ISCHR(mode)):
                kind = "block" if device.block else "character"
                raise PodOwnershipError(f"failed to set up file ownership for {where}: not a {kind} device")
            return _chown(fd, user)
        finally:
            os.close(fd)
    except safepath.UnsafePathError as err:
        raise PodOwnershipError(
            f"failed to set up file ownership for {where}: refused, {err.strerror}"
        ) from None
    except OSError as err:
        raise PodOwnershipError(f"failed to set up file ownership for {where}: {err.strerror}") from None


def _give_host_disk(base_fd: int, disk: host_disk.HostDiskImage, user: int) -> tuple[str, bool]:
    """The image given to ``user``, when it is there."""
    where = f"{pod_paths.VMI_DISKS_DIR}/{disk.volume}"
    try:
        directory = safepath.openat2(
            base_fd, disk.volume, os.O_PATH | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS
        )
    except FileNotFoundError:
        raise PodOwnershipError(f"{disk.source}: {where} is not mounted in the pod") from None
    except safepath.UnsafePathError as err:
        raise PodOwnershipError(f"{disk.source}: {where}: refused, {err.strerror}") from None
    except OSError as err:
        raise PodOwnershipError(f"{disk.source}: {where}: {err.strerror}") from None
    try:
        image = _open(directory, disk.file_name)
        if image is None:
            # virt-handler made each DiskOrCreate image just before; a missing Disk image is the launcher's
            # to report.
            return where, False
        try:
            mode = os.fstat(image).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISBLK(mode)):
                raise PodOwnershipError(
                    f"{disk.source}: {where}/{disk.file_name} is neither a file nor a block device"
                )
            return f"{where}/{disk.file_name}", _chown(image, user)
        finally:
            os.close(image)
    except safepath.UnsafePathError as err:
        raise PodOwnershipError(f"{disk.source}: {where}/{disk.file_name}: refused, {err.strerror}") from None
    except OSError as err:
        raise PodOwnershipError(f"{disk.source}: changing the owner of {where}: {err.strerror}") from None
    finally:
        os.close(directory)


def claim_pod(root: PodRoot, vmi: Mapping[str, Any]) -> list[str]:
    """Gives what the non-root launcher of ``vmi`` opens in the pod at ``root`` to the launcher's user
    (the whole VMI is checked first); the paths whose owner changed, none for a root VMI."""
    user = runtime_user(vmi)
    if user is None:
        return []
    hypervisor, network = _devices(vmi)
    blocks, disks = _volumes(vmi)
    try:
        root_fd = root.open_directory(".")
    except OSError as err:
        raise PodOwnershipError(f"the launcher's pod root: {err.strerror}") from None
    try:
        # KubeVirt's order: the hypervisor's devices, the storage, then the network's devices.
        changed = _give_devices(root_fd, [*hypervisor, *blocks], user)
        changed += _give_host_disks(root, disks, user)
        changed += _give_devices(root_fd, network, user)
    finally:
        os.close(root_fd)
    return changed


def _give_devices(root_fd: int, devices: list[_Device], user: int) -> list[str]:
    return [f"/{device.path}" for device in devices if _give_device(root_fd, device, user)]


def _give_host_disks(root: PodRoot, disks: list[host_disk.HostDiskImage], user: int) -> list[str]:
    if not disks:
        return []
    try:
        base = root.open_directory(pod_paths.VMI_DISKS_DIR)  # /var/run may be a link to /run in the image
    except OSError:
        raise PodOwnershipError(f"{disks[0].source}: {pod_paths.VMI_DISKS_DIR} is not in the pod") from None
    changed = []
    try:
        for disk in disks:
            path, given = _give_host_disk(base, disk, user)
            if given:
                changed.append(path)
    finally:
        os.close(base)
    return changed


class PodOwnership:
    """:func:`claim_pod` for the pod whose launcher serves a given command socket."""

    def __init__(self, *, pod_root: Callable[[Path], PodRoot] = launcher_root) -> None:
        self._pod_root = pod_root

    def claim(self, vmi: Mapping[str, Any], launcher_socket: Path) -> list[str]:
        if runtime_user(vmi) is None:
            return []  # a root launcher opens what it needs; its pod is not even looked up
        try:
            root = self._pod_root(launcher_socket)
        except PodSocketError as err:
            raise PodOwnershipError(f"the launcher's pod: {err}") from None
        return claim_pod(root, vmi)
