"""The node side: publishing a volume at the path the kubelet gives (a bind mount of the volume's directory,
or of the loop device over its file), unpublishing it, its usage, and taking up an expansion.

The node plugin runs in the node's mount namespace, where the kubelet's pod directories are a shared mount:
a mount made here shows in the containers the kubelet starts afterwards.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
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


class NodeService:
    """Publishes the volumes of one node's data directory; one request at a time."""

    def __init__(self, data: DataDir) -> None:
        self.data = data
        self.lock = threading.Lock()

    def volume(self, volume_id: str) -> Volume:
        volume = self.data.volume(volume_id)
        if volume is None:
            raise CsiError(grpc.StatusCode.NOT_FOUND, f"volume {volume_id} is not on this node")
        return volume

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

    def publish(self, volume_id: str, target: str, *, block: bool, readonly: bool) -> None:
        volume = self.volume(volume_id)
        if volume.block != block:
            kind = "a Block" if volume.block else "a Filesystem"
            raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, f"volume {volume_id} is {kind} volume")
        path = self._target(target)
        if is_mount_point(path):
            return  # published already
        source = self.data.checked_data(self.data.volume_data(volume), block=block)
        path.parent.mkdir(parents=True, exist_ok=True)  # the kubelet's publish directory for a device
        if block:
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
        volume = self.data.volume(volume_id)
        while is_mount_point(path):
            _run("umount", str(path))
        found = _lstat(path)
        if found is not None:
            if stat.S_ISDIR(found.st_mode):
                path.rmdir()
            else:
                path.unlink()
        if volume is not None and volume.block:
            for device in loop_devices(self.data.volume_data(volume)):
                if not _device_in_use(device):
                    _run("losetup", "--detach", device)

    def stats(self, volume_id: str, volume_path: str) -> tuple[Volume, int, int, int, int]:
        """The volume, bytes used and available, inodes used and free."""
        volume = self.volume(volume_id)
        path = Path(volume_path)
        if not path.is_absolute() or not is_mount_point(path):
            raise CsiError(grpc.StatusCode.NOT_FOUND, f"volume {volume_id} is not published at {volume_path}")
        if volume.block:
            return volume, 0, 0, 0, 0
        used, inodes = disk_usage(self.data.volume_data(volume))
        filesystem = os.statvfs(self.data.volume_data(volume))
        available = max(0, min(volume.capacity - used, filesystem.f_bavail * filesystem.f_frsize))
        return volume, used, available, inodes, filesystem.f_favail

    def expand(self, volume_id: str, volume_path: str) -> Volume:
        """Makes the node see the volume's new size (the controller grew it): a loop device re-reads its
        file's size; a directory has nothing to grow."""
        volume = self.volume(volume_id)
        path = Path(volume_path)
        if not path.is_absolute() or _lstat(path) is None:
            raise CsiError(grpc.StatusCode.NOT_FOUND, f"volume path {volume_path} does not exist")
        if volume.block:
            for device in loop_devices(self.data.volume_data(volume)):
                _run("losetup", "--set-capacity", device)
        return volume


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except FileNotFoundError:
        return None
