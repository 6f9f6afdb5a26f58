"""The node side: publishing a volume at the path the kubelet gives (a bind mount of the volume's directory,
or of the loop device over its file), unpublishing it, its usage, and taking up an expansion.

The node plugin runs in the node's mount namespace, where the kubelet's pod directories are a shared mount:
a mount made here shows in the containers the kubelet starts afterwards. It publishes the volumes of its
node's data directory and those of the shared one (multi-node volumes, published on several nodes at once).

Loop devices are the kernel's, seen by every node, but a node sees only its own mounts: it can tell whether
a node-local volume's device is still published (and detaches it on the last unpublish), not whether
another node still uses a shared volume's. A shared Block volume's device therefore stays attached, one for
all nodes, until the controller deletes the volume.
"""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc

from .store import CsiError, DataDir, Volume, disk_usage, loop_devices


@dataclass(frozen=True)
class Mount:
    point: str
    root: str
    fstype: str
    source: str


def _unescape(field: str) -> str:
    """Mount points in mountinfo have space, tab, newline and backslash as octal escapes."""
    for escaped, plain in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(escaped, plain)
    return field


def mounts() -> list[Mount]:
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        found.append(Mount(_unescape(fields[4]), _unescape(fields[3]), tail[0], tail[1]))
    return found


def is_mount_point(path: Path) -> bool:
    """Whether something is mounted at ``path`` (``os.path.ismount`` misses a bind mount from the same
    filesystem)."""
    return any(mount.point == str(path) for mount in mounts())


def _run(*argv: str) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise CsiError(grpc.StatusCode.INTERNAL, f"{' '.join(argv)}: {result.stderr.strip()}")
    return result.stdout


def _device_in_use(device: str) -> bool:
    """Whether the loop device's node is still bind-mounted somewhere (another publish of the volume)."""
    name = "/" + device.removeprefix("/dev/")
    return any(mount.root == name and mount.fstype == "devtmpfs" for mount in mounts())


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Holds an exclusive lock on ``directory``, across processes (the node plugins of all nodes)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class NodeService:
    """Publishes the volumes of one node's data directory and of the shared one; one request at a time."""

    def __init__(self, data: DataDir, shared: DataDir | None = None) -> None:
        self.data = data
        self.shared = shared
        self.lock = threading.Lock()

    def find(self, volume_id: str) -> tuple[DataDir, Volume] | None:
        """The volume and its data directory: this node's, or the shared one for a shared volume."""
        if (volume := self.data.volume(volume_id)) is not None:
            return self.data, volume
        shared = self.shared.volume(volume_id) if self.shared is not None else None
        if self.shared is not None and shared is not None and shared.shared:
            return self.shared, shared
        return None

    def volume(self, volume_id: str) -> tuple[DataDir, Volume]:
        found = self.find(volume_id)
        if found is None:
            raise CsiError(grpc.StatusCode.NOT_FOUND, f"volume {volume_id} is not on this node")
        return found

    def _target(self, target: str) -> Path:
        path = Path(target)
        if not path.is_absolute() or ".." in path.parts:
            raise CsiError(
                grpc.StatusCode.INVALID_ARGUMENT, f"target path {target} is not absolute and normal"
            )
        found = _lstat(path)
        if found is not None and stat.S_ISLNK(found.st_mode):
            raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, f"target path {target} is a symlink")
        return path

    def publish(
        self, volume_id: str, target: str, *, block: bool, readonly: bool, multi_node: bool = False
    ) -> None:
        data, volume = self.volume(volume_id)
        if volume.block != block:
            kind = "a Block" if volume.block else "a Filesystem"
            raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, f"volume {volume_id} is {kind} volume")
        if multi_node and not volume.shared:
            raise CsiError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"volume {volume_id} is node-local: it cannot be published with a multi-node access mode",
            )
        path = self._target(target)
        if is_mount_point(path):
            return  # published already
        source = data.checked_data(data.volume_data(volume), block=block)
        path.parent.mkdir(parents=True, exist_ok=True)  # the kubelet's publish directory for a device
        if block:
            # Another node's plugin may attach a shared volume at the same moment: one device for both.
            with _locked(data.volumes_dir):
                source = Path(self._attach(source))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            os.close(fd)
        else:
            path.mkdir(mode=0o750, exist_ok=True)
        _run("mount", "--bind", str(source), str(path))
        if readonly:
            _run("mount", "-o", "remount,bind,ro", str(path))

    @staticmethod
    def _attach(backing_file: Path) -> str:
        attached = loop_devices(backing_file)
        if attached:
            return attached[0]
        return _run("losetup", "--find", "--show", str(backing_file)).strip()

    def unpublish(self, volume_id: str, target: str) -> None:
        path = self._target(target)
        known = self.find(volume_id)
        while is_mount_point(path):
            _run("umount", str(path))
        found = _lstat(path)
        if found is not None:
            if stat.S_ISDIR(found.st_mode):
                path.rmdir()
            else:
                path.unlink()
        if known is None:
            return
        data, volume = known
        if volume.block and not volume.shared:  # a shared volume's device may be in use on another node
            for device in loop_devices(data.volume_data(volume)):
                if not _device_in_use(device):
                    _run("losetup", "--detach", device)

    def stats(self, volume_id: str, volume_path: str) -> tuple[Volume, int, int, int, int]:
        """The volume, bytes used and available, inodes used and free."""
        data, volume = self.volume(volume_id)
        path = Path(volume_path)
        if not path.is_absolute() or not is_mount_point(path):
            raise CsiError(grpc.StatusCode.NOT_FOUND, f"volume {volume_id} is not published at {volume_path}")
        if volume.block:
            return volume, 0, 0, 0, 0
        used, inodes = disk_usage(data.volume_data(volume))
        filesystem = os.statvfs(data.volume_data(volume))
        available = max(0, min(volume.capacity - used, filesystem.f_bavail * filesystem.f_frsize))
        return volume, used, available, inodes, filesystem.f_favail

    def expand(self, volume_id: str, volume_path: str) -> Volume:
        """Makes the node see the volume's new size (the controller grew it): a loop device re-reads its
        file's size; a directory has nothing to grow."""
        data, volume = self.volume(volume_id)
        path = Path(volume_path)
        if not path.is_absolute() or _lstat(path) is None:
            raise CsiError(grpc.StatusCode.NOT_FOUND, f"volume path {volume_path} does not exist")
        if volume.block:
            for device in loop_devices(data.volume_data(volume)):
                _run("losetup", "--set-capacity", device)
        return volume


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except FileNotFoundError:
        return None
