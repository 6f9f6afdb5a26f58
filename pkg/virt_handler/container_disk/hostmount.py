"""The node's side of a containerDisk bind mount, run as a short-lived process in the host's mount namespace.

Linux only bind-mounts from and onto mounts of the caller's own mount namespace, and the disk container's
root file system (the overlay the container runtime mounted) is visible only on the host, so the work is
done by ``python -m kubevirt.virt_handler.container_disk.hostmount`` after ``setns`` into PID 1's mount
namespace (like KubeVirt's ``virt-chroot --mount``). A fresh process is single-threaded, which ``setns``
for a mount namespace requires; everything it needs is imported before it switches.

Every path that a pod controls is opened with ``openat2``: the image path inside the disk container's root
with ``RESOLVE_IN_ROOT`` (a symlink in the image cannot lead out of it), the target below the pod's
directory with no symlink at all. The mount itself goes through ``/proc/self/fd/N`` of those descriptors.
"""

from __future__ import annotations

import ctypes
import json
import os
import stat
import sys
from contextlib import suppress
from dataclasses import dataclass

from kubevirt import pod_paths, safepath
from kubevirt.container_disk import DISK_DIR

HOST_MOUNT_NAMESPACE = "/proc/1/ns/mnt"
HOST = "host"  # as --namespace: the host's mount namespace, found by host_mount_namespace()
_CLONE_NEWNS = 0x00020000
_MS_RDONLY = 0x1
_MS_REMOUNT = 0x20
_MS_BIND = 0x1000
_MNT_DETACH = 0x2
_MAX_STACKED = 8
_EMPTY_DIR_PATH = ("volumes", "kubernetes.io~empty-dir", pod_paths.CONTAINER_DISKS)

_libc = ctypes.CDLL(None, use_errno=True)


class HostMountError(Exception):
    """The disk could not be mounted or unmounted; the message says why."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """A mount point in a launcher pod's ``container-disks`` volume, on the host."""

    pods_dir: str  # the kubelet's pods directory as the host sees it
    pod_uid: str
    name: str  # disk_<N>.img, or a kernel-boot artifact's name below kernel-boot/

    def check(self) -> None:
        if not safepath.plain_name(self.pod_uid):
            raise HostMountError(f"{self.pod_uid[:80]!r} is not a pod UID")
        parts = self.name.split("/")
        if not parts or len(parts) > 2 or not all(safepath.plain_name(part) for part in parts):
            raise HostMountError(f"{self.name[:80]!r} is not a mount target name")


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise HostMountError(f"{what}: {os.strerror(code)}")


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat_file:
        # The command name in parentheses may hold spaces; the parent PID is the second field after it.
        return int(stat_file.read().rsplit(")", 1)[1].split()[1])


def host_mount_namespace() -> str:
    """PID 1's mount namespace (KubeVirt's choice), or where a host keeps PID 1 out of reach (its
    capabilities exceed a privileged container's), the nearest ancestor's outside our own: the container
    runtime's shim, which runs in the node's mount namespace."""
    try:
        os.close(os.open(HOST_MOUNT_NAMESPACE, os.O_RDONLY | os.O_CLOEXEC))
        return HOST_MOUNT_NAMESPACE
    except PermissionError:
        pass
    own = os.stat("/proc/self/ns/mnt").st_ino
    pid = os.getppid()
    while pid > 1:
        candidate = f"/proc/{pid}/ns/mnt"
        try:
            if os.stat(candidate).st_ino != own:
                return candidate
            pid = _parent(pid)
        except OSError:
            break
    return "/proc/self/ns/mnt"  # no other namespace above us: this is the host's


def enter_host_mount_namespace(namespace: str) -> None:
    fd = os.open(namespace, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(_libc.setns(fd, _CLONE_NEWNS), f"setns {namespace}")
    finally:
        os.close(fd)


def mount_id(fd: int) -> int:
    """The ID of the mount ``fd`` is on (``mnt_id`` in its fdinfo)."""
    with open(f"/proc/self/fdinfo/{fd}") as info:
        for line in info:
            if line.startswith("mnt_id:"):
                return int(line.split()[1])
    raise HostMountError("the kernel reports no mount ID")


def container_root(pid: int) -> str:
    """Where the root file system of process ``pid`` is mounted in this mount namespace: the mount whose
    device and root inode are those of ``/proc/<pid>/root``."""
    try:
        wanted = os.stat(f"/proc/{pid}/root")
    except OSError as err:
        raise HostMountError(f"process {pid}: {err.strerror}") from None
    with open("/proc/self/mountinfo") as mounts:
        for line in mounts:
            fields = line.split()
            major, minor = (int(part) for part in fields[2].split(":"))
            if os.makedev(major, minor) != wanted.st_dev or fields[3] != "/":
                continue
            point = fields[4].encode().decode("unicode_escape")
            try:
                found = os.stat(point)
            except OSError:
                continue
            if (found.st_dev, found.st_ino) == (wanted.st_dev, wanted.st_ino):
                return point
    raise HostMountError(f"the root file system of process {pid} is not mounted on this host")


def _open_image(root: str, image_path: str) -> int:
    """An ``O_PATH`` descriptor of the image: ``image_path``, or else the one file in ``/disk``, resolved
    inside ``root`` as if it were ``/``."""
    with safepath.closing(os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)) as root_fd:
        try:
            if not image_path:
                with safepath.closing(
                    safepath.openat2(
                        root_fd, DISK_DIR.lstrip("/"), os.O_RDONLY | os.O_DIRECTORY, resolve=safepath.IN_ROOT
                    )
                ) as disk_dir:
                    files = os.listdir(disk_dir)
                if len(files) != 1:
                    found = "no file" if not files else "more than one file"
                    raise HostMountError(f"{found} found in folder {DISK_DIR}, exactly one disk is needed")
                image_path = f"{DISK_DIR}/{files[0]}"
            fd = safepath.openat2(root_fd, image_path.lstrip("/"), os.O_PATH, resolve=safepath.IN_ROOT)
        except safepath.UnsafePathError:
            raise HostMountError(f"{image_path[:200]}: leads through a link the image may not use") from None
        except OSError as err:
            raise HostMountError(f"{image_path[:200]}: {err.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise HostMountError(f"{image_path[:200]}: not a regular file")
    return fd


def _open_target_dir(target: Target, *, create: bool) -> int:
    """The directory of the mount point, reached from the pods directory through no symlink."""
    target.check()
    parts = [target.pod_uid, *_EMPTY_DIR_PATH, *target.name.split("/")[:-1]]
    with safepath.closing(os.open(target.pods_dir, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)) as pods:
        try:
            if create and "/" in target.name:
                parent = safepath.openat2(pods, "/".join(parts[:-1]), os.O_PATH, resolve=safepath.NO_SYMLINKS)
                with safepath.closing(parent), suppress(FileExistsError):
                    os.mkdir(parts[-1], 0o755, dir_fd=parent)
            return safepath.openat2(
                pods, "/".join(parts), os.O_PATH | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS
            )
        except safepath.UnsafePathError:
            raise HostMountError(f"{'/'.join(parts)}: a symlink where a directory was expected") from None
        except OSError as err:
            raise HostMountError(f"{'/'.join(parts)}: {err.strerror}") from None


def _open_target(directory: int, name: str, *, create: bool) -> int:
    try:
        if create:
            # The mount point of a file is an (empty) file; NO_SYMLINKS keeps O_CREAT off any link.
            created = safepath.openat2(
                directory, name, os.O_RDONLY | os.O_CREAT, resolve=safepath.NO_SYMLINKS, mode=0o440
            )
            os.close(created)
        fd = safepath.openat2(directory, name, os.O_PATH, resolve=safepath.NO_SYMLINKS)
    except safepath.UnsafePathError:
        raise HostMountError(f"{name}: a symlink where the mount point should be") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise HostMountError(f"{name}: the mount point is not a regular file")
    return fd


def is_mounted(target: Target) -> bool:
    try:
        directory = _open_target_dir(target, create=False)
    except HostMountError:
        return False
    with safepath.closing(directory):
        try:
            fd = _open_target(directory, target.name.split("/")[-1], create=False)
        except (HostMountError, FileNotFoundError):
            return False
        with safepath.closing(fd):
            return mount_id(fd) != mount_id(directory)


def mount(pid: int, image_path: str, target: Target) -> bool:
    """Bind-mounts the image of the container whose process is ``pid`` read-only at ``target``, unless
    something is mounted there already. Returns whether it mounted now."""
    directory = _open_target_dir(target, create=True)
    with safepath.closing(directory):
        name = target.name.split("/")[-1]
        with safepath.closing(_open_target(directory, name, create=True)) as point:
            if mount_id(point) != mount_id(directory):
                return False
            with safepath.closing(_open_image(container_root(pid), image_path)) as image:
                _check(
                    _libc.mount(
                        f"/proc/self/fd/{image}".encode(),
                        f"/proc/self/fd/{point}".encode(),
                        None,
                        _MS_BIND,
                        None,
                    ),
                    f"bind-mounting {image_path or DISK_DIR} at {target.name}",
                )
        # The descriptor opened before the mount still names the file below it: reopen to reach the mount.
        with safepath.closing(_open_target(directory, name, create=False)) as mounted:
            flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY
            _check(
                _libc.mount(None, f"/proc/self/fd/{mounted}".encode(), None, flags, None),
                f"making {target.name} read-only",
            )
    return True


def unmount(target: Target) -> bool:
    """Unmounts whatever is mounted at ``target`` (stacked mounts too). Returns whether anything was."""
    unmounted = False
    for _ in range(_MAX_STACKED):
        if not is_mounted(target):
            return unmounted
        with (
            safepath.closing(_open_target_dir(target, create=False)) as directory,
            safepath.closing(_open_target(directory, target.name.split("/")[-1], create=False)) as point,
        ):
            # Detached: our own descriptor keeps the mount busy, and so may a QEMU still exiting.
            _check(_libc.umount2(f"/proc/self/fd/{point}".encode(), _MNT_DETACH), f"unmounting {target.name}")
        unmounted = True
    raise HostMountError(f"{target.name}: still mounted after {_MAX_STACKED} unmounts")


def main(argv: list[str]) -> int:
    """``hostmount [--namespace PATH] mount|unmount JSON``: the request as JSON; prints the answer as JSON."""
    namespace: str | None = HOST
    if argv[:1] == ["--namespace"]:
        namespace, argv = argv[1] or None, argv[2:]
    if len(argv) != 2 or argv[0] not in ("mount", "unmount"):
        print("usage: hostmount [--namespace PATH] mount|unmount REQUEST", file=sys.stderr)
        return 2
    try:
        request = json.loads(argv[1])
        target = Target(pods_dir=request["podsDir"], pod_uid=request["podUID"], name=request["name"])
        if namespace:
            enter_host_mount_namespace(host_mount_namespace() if namespace == HOST else namespace)
        if argv[0] == "mount":
            changed = mount(int(request["pid"]), str(request.get("path") or ""), target)
        else:
            changed = unmount(target)
    except (HostMountError, OSError, KeyError, ValueError) as err:
        print(str(err), file=sys.stderr)
        return 1
    print(json.dumps({"changed": changed}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
