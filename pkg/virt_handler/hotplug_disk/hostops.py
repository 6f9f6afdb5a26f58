"""The node's side of hotplugged volumes, run as a short-lived process in the host's mount namespace.

As for containerDisks (:mod:`kubevirt.virt_handler.container_disk.hostmount`), a bind mount made there
reaches the launcher's container through its ``HostToContainer`` mount of ``hotplug-disks``, and the
node's cgroup file system is mounted there. ``python -m kubevirt.virt_handler.hotplug_disk.hostops``
takes one request with a list of operations and answers each on its own, so that one refused volume does
not keep the others from being mounted:

- ``mountFile``: a Filesystem claim's ``disk.img`` bind-mounted onto ``<volume>.img`` (made empty, 0666)
  in the launcher's ``hotplug-disks``, then given to the qemu user (107). The claim is the attachment
  pod's volume the kubelet mounted at ``/<volume>`` in its container: the kubelet's volume directory of
  that pod (``volumes/<plugin>/<name>``, ``<name>/mount`` for CSI) whose inode is the one the attachment
  pod's process sees at ``/<volume>``. KubeVirt asks ``findmnt`` inside the container and maps its
  answer back to a node path; comparing inodes needs no parsing and can only ever pick a directory the
  kubelet made for that very pod.
- ``makeBlock``: the device node the container runtime made in the attachment pod's ``hotplug-disks``
  for a Block claim (``<volume>/<claim uid>``) copied as ``<volume>`` (same major:minor and mode, owner
  107) into the launcher's, and ``b MAJOR:MINOR rwm`` allowed in the launcher container's devices cgroup.
- ``unmountFile`` and ``removeBlock`` undo them (the cgroup rule only if it was added here).

What a VM owner controls (the claim's files, the launcher pod's ``hotplug-disks``, the attachment
pod's, which its user can write) cannot lead the handler elsewhere: every path below the pods directory
is opened with ``openat2(RESOLVE_NO_SYMLINKS)``; ``disk.img`` must be a regular file and so must the
mount point, a device node found in the launcher's volume must be the claim's own block device, and the
claim's device is taken only from a block device node (which no pod user can make); mounts and owner
changes go through ``/proc/self/fd/N`` of the very inodes checked.
"""

from __future__ import annotations

import ctypes
import json
import os
import stat
import sys
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from kubevirt import safepath
from kubevirt.virt_handler.container_disk.hostmount import (
    HOST,
    HostMountError,
    enter_host_mount_namespace,
    host_mount_namespace,
    mount_id,
)
from kubevirt.virt_handler.hotplug_disk import devices_cgroup
from kubevirt.virt_handler.hotplug_disk.layout import (
    CSI_MOUNT,
    CSI_PLUGIN,
    DISK_IMAGE,
    HOTPLUG_DISKS,
    QEMU_USER,
    HotplugVolumeError,
    check_name,
    disks_dir,
    target_name,
)

JSON = dict[str, Any]
REFUSED = "refused"  # something in a pod or claim is not what it must be: nothing was done with it
MISSING = "missing"  # the claim lacks its disk.img (KubeVirt's ErrNotExist: an event, not a failed sync)
FAILED = "failed"
WAITING = "waiting"
MOUNTED = "mounted"
_MS_BIND = 0x1000
_MNT_DETACH = 0x2
_MAX_STACKED = 8

_libc = ctypes.CDLL(None, use_errno=True)


class OpError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "an unknown kind of file"


def _fd_path(fd: int) -> bytes:
    return safepath.fd_path(fd).encode()


def _give_to_qemu(fd: int) -> None:
    """Owner and group 107 for the file ``fd`` names (through the descriptor: no path to swap)."""
    info = os.fstat(fd)
    if (info.st_uid, info.st_gid) != (QEMU_USER, QEMU_USER):
        os.chown(_fd_path(fd), QEMU_USER, QEMU_USER)


def _open_dir(base: int, parts: list[str], what: str, *, flags: int = os.O_PATH) -> int:
    """``base/parts...`` as a directory, no link followed; FileNotFoundError when something is missing."""
    try:
        return safepath.openat2(base, "/".join(parts), flags | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS)
    except safepath.UnsafePathError:
        raise OpError(REFUSED, f"{what}: refused, a symlink where a directory was expected") from None
    except NotADirectoryError:
        raise OpError(REFUSED, f"{what}: refused, not a directory") from None


def _launcher_dir(pods: int, launcher: str) -> int:
    return _open_dir(pods, disks_dir(launcher), f"the launcher pod's {HOTPLUG_DISKS} volume")


def _open_entry(directory: int, name: str, where: str) -> int:
    """An ``O_PATH`` descriptor of ``name`` itself in ``directory`` (a symlink is refused, not followed)."""
    try:
        return safepath.openat2(directory, name, os.O_PATH, resolve=safepath.NO_SYMLINKS)
    except safepath.UnsafePathError:
        raise OpError(REFUSED, f"{where}: refused, a symlink") from None


def _regular_file(fd: int, where: str) -> int:
    """``fd`` when it names a regular file; otherwise it is closed and refused."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OpError(REFUSED, f"{where}: refused, {_kind(mode)} and not a regular file")
    return fd


def _file_target(directory: int, name: str) -> int:
    """The mount point ``name`` in the launcher's volume: an empty regular file, made if missing."""
    where = f"{HOTPLUG_DISKS}/{name} in the launcher pod"
    try:
        created = safepath.openat2(
            directory, name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, resolve=safepath.NO_SYMLINKS, mode=0o666
        )
        os.close(created)
    except FileExistsError:
        pass
    except safepath.UnsafePathError:
        raise OpError(REFUSED, f"{where}: refused, a symlink") from None
    fd = _open_entry(directory, name, where)
    return _regular_file(fd, where)


def _is_mount_point(fd: int, directory: int) -> bool:
    return mount_id(fd) != mount_id(directory)


def _find_claim(pods: int, attach: str, pid: int, volume: str) -> int | None:
    """The kubelet's directory of the attachment pod's volume that its container has at ``/<volume>``
    (an ``O_PATH`` descriptor), None while there is none."""
    try:
        root = os.open(f"/proc/{pid}/root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None  # the attachment pod's process is gone: a new one will be found next time
    with safepath.closing(root):
        try:
            inside = safepath.openat2(root, volume, os.O_PATH | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS)
        except (FileNotFoundError, NotADirectoryError, safepath.UnsafePathError):
            return None
        with safepath.closing(inside):
            seen = os.fstat(inside)
    wanted = (seen.st_dev, seen.st_ino)
    try:
        volumes = _open_dir(pods, [attach, "volumes"], "the attachment pod's volumes", flags=os.O_RDONLY)
    except FileNotFoundError:
        return None
    with safepath.closing(volumes):
        for plugin in sorted(os.listdir(volumes)):
            try:
                plugin_fd = safepath.openat2(
                    volumes, plugin, os.O_RDONLY | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS
                )
            except OSError:
                continue
            with safepath.closing(plugin_fd):
                for name in sorted(os.listdir(plugin_fd)):
                    relative = f"{name}/{CSI_MOUNT}" if plugin == CSI_PLUGIN else name
                    try:
                        candidate = safepath.openat2(
                            plugin_fd, relative, os.O_PATH | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS
                        )
                    except OSError:
                        continue
                    found = os.fstat(candidate)
                    if (found.st_dev, found.st_ino) == wanted:
                        return candidate
                    os.close(candidate)
    return None


def _open_image(claim: int, volume: str) -> int:
    where = f"{DISK_IMAGE} of volume {volume}"
    try:
        fd = _open_entry(claim, DISK_IMAGE, where)
    except FileNotFoundError:
        raise OpError(MISSING, f"{where}: no such file in the claim") from None
    return _regular_file(fd, where)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OpError(FAILED, f"{what}: {os.strerror(code)}")


def mount_file(pods: int, op: JSON) -> JSON:
    volume = check_name(str(op["volume"]), "volume name")
    launcher = check_name(str(op["launcher"]), "pod UID")
    attach = check_name(str(op["attach"]), "pod UID")
    name = target_name(volume, block=False)
    with safepath.closing(_launcher_dir(pods, launcher)) as directory:
        with safepath.closing(_file_target(directory, name)) as point:
            if not _is_mount_point(point, directory):
                claim = _find_claim(pods, attach, int(op["attachPid"]), volume)
                if claim is None:
                    return {"state": WAITING, "why": f"the attachment pod has no volume mounted at /{volume}"}
                with safepath.closing(claim), safepath.closing(_open_image(claim, volume)) as image:
                    _check(
                        _libc.mount(_fd_path(image), _fd_path(point), None, _MS_BIND, None),
                        f"bind-mounting {DISK_IMAGE} of volume {volume} at {HOTPLUG_DISKS}/{name}",
                    )
        # The descriptor opened before the mount names the file below it: reopen to reach the mount.
        with safepath.closing(_file_target(directory, name)) as mounted:
            if not _is_mount_point(mounted, directory):
                raise OpError(FAILED, f"{HOTPLUG_DISKS}/{name}: not mounted after the mount")
            _give_to_qemu(mounted)
    return {"state": MOUNTED}


def unmount_file(pods: int, op: JSON) -> JSON:
    volume = check_name(str(op["volume"]), "volume name")
    launcher = check_name(str(op["launcher"]), "pod UID")
    name = target_name(volume, block=False)
    try:
        directory = _launcher_dir(pods, launcher)
    except FileNotFoundError:
        return {"changed": False}  # the pod's volumes are gone, and our mounts with them
    changed = False
    with safepath.closing(directory):
        for _ in range(_MAX_STACKED):
            try:
                point = safepath.openat2(directory, name, os.O_PATH, resolve=safepath.NO_SYMLINKS)
            except (FileNotFoundError, safepath.UnsafePathError):
                break  # nothing there, or a link the launcher put in its place: nothing we mounted
            with safepath.closing(point):
                if not _is_mount_point(point, directory):
                    break
                # Detached: a QEMU still closing the image may keep the mount busy for a moment.
                _check(_libc.umount2(_fd_path(point), _MNT_DETACH), f"unmounting {HOTPLUG_DISKS}/{name}")
            changed = True
        else:
            raise OpError(FAILED, f"{HOTPLUG_DISKS}/{name}: still mounted after {_MAX_STACKED} unmounts")
        changed = _unlink(directory, name) or changed
    return {"changed": changed}


def _unlink(directory: int, name: str) -> bool:
    """Removes ``name`` (never a directory) from the launcher's volume; whether there was one."""
    try:
        os.unlink(name, dir_fd=directory)
    except (FileNotFoundError, IsADirectoryError):
        return False
    return True


def _source_device(pods: int, attach: str, volume: str) -> tuple[int, int] | None:
    """Device number and mode of the block device the runtime made for the claim in the attachment
    pod's ``hotplug-disks/<volume>``; None while there is none yet."""
    where = f"the attachment pod's {HOTPLUG_DISKS}/{volume}"
    try:
        directory = _open_dir(pods, [*disks_dir(attach), volume], where, flags=os.O_RDONLY)
    except FileNotFoundError:
        return None
    with safepath.closing(directory):
        names = sorted(os.listdir(directory))
        found: dict[int, int] = {}
        for name in names:
            info = os.stat(name, dir_fd=directory, follow_symlinks=False)
            if stat.S_ISBLK(info.st_mode):
                found.setdefault(info.st_rdev, info.st_mode)
    if not names:
        return None
    if not found:
        raise OpError(REFUSED, f"{where}: refused, it holds no block device")
    if len(found) > 1:
        raise OpError(REFUSED, f"{where}: refused, it holds more than one block device")
    return next(iter(found.items()))


def _launcher_cgroup(path: str, launcher: str) -> str:
    if not devices_cgroup.names_pod(path, launcher):
        raise OpError(REFUSED, f"the cgroup {path[:200]} is not one of the launcher pod {launcher}")
    return path


def make_block(pods: int, op: JSON) -> JSON:
    volume = check_name(str(op["volume"]), "volume name")
    launcher = check_name(str(op["launcher"]), "pod UID")
    attach = check_name(str(op["attach"]), "pod UID")
    cgroup_path = _launcher_cgroup(str(op["cgroup"]), launcher)
    source = _source_device(pods, attach, volume)
    if source is None:
        return {"state": WAITING, "why": f"the attachment pod has no device for volume {volume} yet"}
    rdev, mode = source
    device = devices_cgroup.device_of(rdev)
    where = f"{HOTPLUG_DISKS}/{volume} in the launcher pod"
    with safepath.closing(_launcher_dir(pods, launcher)) as directory:
        with suppress(FileExistsError):
            os.mknod(volume, stat.S_IFBLK | (stat.S_IMODE(mode) & 0o666), rdev, dir_fd=directory)
        with safepath.closing(_open_entry(directory, volume, where)) as node:
            info = os.fstat(node)
            if not stat.S_ISBLK(info.st_mode) or info.st_rdev != rdev:
                found = _kind(info.st_mode)
                if stat.S_ISBLK(info.st_mode):
                    found = f"block device {devices_cgroup.device_of(info.st_rdev)}"
                raise OpError(REFUSED, f"{where}: refused, {found} and not the claim's block device {device}")
            _give_to_qemu(node)
    with safepath.closing(devices_cgroup.open_cgroup(cgroup_path)) as cgroup:
        preexisting = devices_cgroup.allowed(cgroup, device)
        if not preexisting:
            devices_cgroup.allow(cgroup, device)
    return {"state": MOUNTED, "device": device, "preexisting": preexisting}


def remove_block(pods: int, op: JSON) -> JSON:
    volume = check_name(str(op["volume"]), "volume name")
    launcher = check_name(str(op["launcher"]), "pod UID")
    device = str(op.get("device") or "")
    changed = False
    try:
        directory = _launcher_dir(pods, launcher)
    except FileNotFoundError:
        directory = None
    if directory is not None:
        with safepath.closing(directory):
            try:
                info = os.stat(volume, dir_fd=directory, follow_symlinks=False)
            except FileNotFoundError:
                info = None
            if info is not None and stat.S_ISBLK(info.st_mode) and not device:
                device = devices_cgroup.device_of(info.st_rdev)  # recorded before its number was known
            changed = _unlink(directory, volume)
    cgroup_path = str(op.get("cgroup") or "")
    if op.get("deny") and device and cgroup_path:
        try:
            cgroup = devices_cgroup.open_cgroup(_launcher_cgroup(cgroup_path, launcher))
        except FileNotFoundError:
            return {"changed": changed}  # the container is gone, and its cgroup with it
        with safepath.closing(cgroup):
            devices_cgroup.deny(cgroup, device)
    return {"changed": changed}


def in_place(pods: int, launcher: str, volume: str, *, block: bool, device: str = "") -> bool:
    """Whether the launcher's ``hotplug-disks`` holds the volume as put there: a mount on ``<volume>.img``,
    or the device node ``<volume>`` of ``device`` (read-only: the handler asks it about each volume)."""
    try:
        directory = _open_dir(pods, disks_dir(launcher), HOTPLUG_DISKS)
    except (OSError, OpError):
        return False
    with safepath.closing(directory):
        try:
            fd = safepath.openat2(
                directory, target_name(volume, block=block), os.O_PATH, resolve=safepath.NO_SYMLINKS
            )
        except OSError:
            return False
        with safepath.closing(fd):
            info = os.fstat(fd)
            if block:
                return stat.S_ISBLK(info.st_mode) and devices_cgroup.device_of(info.st_rdev) == device
            try:
                return stat.S_ISREG(info.st_mode) and _is_mount_point(fd, directory)
            except HostMountError:
                return False


OPERATIONS: dict[str, Callable[[int, JSON], JSON]] = {
    "mountFile": mount_file,
    "unmountFile": unmount_file,
    "makeBlock": make_block,
    "removeBlock": remove_block,
}


def run(pods: int, op: JSON) -> JSON:
    """One operation's answer: its result, or ``error`` and its ``kind``."""
    try:
        return OPERATIONS[str(op["op"])](pods, op)
    except OpError as err:
        return {"error": str(err), "kind": err.kind}
    except safepath.UnsafePathError as err:
        return {"error": f"{err.filename}: refused, {err.strerror}", "kind": REFUSED}
    except (HotplugVolumeError, HostMountError) as err:
        return {"error": str(err), "kind": FAILED}
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        return {"error": f"{where}{err.strerror}", "kind": FAILED}
    except (KeyError, TypeError, ValueError) as err:
        return {"error": f"malformed operation: {err}", "kind": FAILED}


def main(argv: list[str]) -> int:
    """``hostops [--namespace PATH] REQUEST``: ``{"podsDir", "operations"}`` as JSON; prints the results."""
    namespace: str | None = HOST
    if argv[:1] == ["--namespace"]:
        namespace, argv = argv[1] or None, argv[2:]
    if len(argv) != 1:
        print("usage: hostops [--namespace PATH] REQUEST", file=sys.stderr)
        return 2
    try:
        request = json.loads(argv[0])
        operations = list(request["operations"])
        if namespace:
            enter_host_mount_namespace(host_mount_namespace() if namespace == HOST else namespace)
        os.umask(0)  # modes as given: 0666 for a mount point, the source's for a device node
        pods = os.open(str(request["podsDir"]), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except (OSError, KeyError, TypeError, ValueError) as err:
        print(str(err), file=sys.stderr)
        return 1
    with safepath.closing(pods):
        results = [run(pods, op if isinstance(op, dict) else {}) for op in operations]
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
