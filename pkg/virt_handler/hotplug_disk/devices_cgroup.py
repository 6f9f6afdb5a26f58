"""The launcher container's devices cgroup (cgroup v1): letting QEMU open a hotplugged block device.

The container runtime allows a container only the devices it was created with; a Block claim hotplugged
later is a new device node, which the kernel refuses to open until ``b MAJOR:MINOR rwm`` is written to the
container's ``devices.allow`` (KubeVirt's handler does it through runc's cgroup manager). The container is
found through the launcher's own process: the ``devices`` line of ``/proc/<pid>/cgroup``. Writes go to
the node's cgroup file system, found in the mount table of the mount namespace the caller is in (the
host's: a container sees only its own cgroup there).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from kubevirt import safepath
from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError

PROC = Path("/proc")
DEVICES = "devices"
ALLOW = "devices.allow"
DENY = "devices.deny"
LIST = "devices.list"
_DEVICE = re.compile(r"([0-9]{1,10}):([0-9]{1,10})")
_OCTAL = re.compile(r"\\([0-7]{3})")
_ALLOW_ALL = ("a *:* rwm", "b *:* rwm")


def device_of(rdev: int) -> str:
    """``MAJOR:MINOR`` of a device number."""
    return f"{os.major(rdev)}:{os.minor(rdev)}"


def rule(device: str) -> str:
    """The devices cgroup rule giving read, write and mknod of the block device ``MAJOR:MINOR``."""
    if not _DEVICE.fullmatch(device):
        raise HotplugVolumeError(f"{device[:40]!r} is not a MAJOR:MINOR device number")
    return f"b {device} rwm"


def devices_path(cgroup_file: str) -> str:
    """The ``devices`` hierarchy's path in a ``/proc/<pid>/cgroup`` text."""
    for line in cgroup_file.splitlines():
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        if DEVICES in controllers.split(","):
            if not path.startswith("/"):
                break
            return path
    raise HotplugVolumeError("the launcher is in no cgroup v1 devices hierarchy (cgroup v2 is not supported)")


def launcher_devices_path(pid: int, *, proc: Path = PROC) -> str:
    """The devices cgroup of process ``pid`` (the launcher, already checked to be its pod's)."""
    try:
        return devices_path((proc / str(pid) / "cgroup").read_text())
    except FileNotFoundError:
        raise HotplugVolumeError(f"the launcher (pid {pid}) is gone") from None


def names_pod(path: str, pod_uid: str) -> bool:
    """Whether the cgroup ``path`` lies in the pod's cgroup (``pod<uid>`` with the kubelet's cgroupfs
    driver, ``…-pod<uid with underscores>.slice`` with the systemd one)."""
    plain, systemd = f"pod{pod_uid}", f"-pod{pod_uid.replace('-', '_')}.slice"
    return any(part == plain or part.endswith(systemd) for part in path.split("/"))


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda match: chr(int(match.group(1), 8)), field)


def hierarchy(mountinfo: str) -> tuple[str, str]:
    """Mount point and root of the ``devices`` hierarchy in a ``/proc/<pid>/mountinfo`` text."""
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        rest = fields[fields.index("-", 6) + 1 :]
        if len(rest) >= 3 and rest[0] == "cgroup" and DEVICES in rest[2].split(","):
            return _unescape(fields[4]), _unescape(fields[3])
    raise HotplugVolumeError("no cgroup v1 devices hierarchy is mounted on this node")


def open_cgroup(path: str, *, mountinfo: Path = Path("/proc/self/mountinfo")) -> int:
    """An ``O_PATH`` descriptor of the devices cgroup ``path``, no link followed below the hierarchy."""
    point, root = hierarchy(mountinfo.read_text())
    base = root.rstrip("/")
    if path != base and not path.startswith(f"{base}/"):
        raise HotplugVolumeError(f"the cgroup {path[:200]} is outside the devices hierarchy mounted here")
    relative = path[len(base) :]
    parts = [part for part in relative.split("/") if part]
    if not all(safepath.plain_name(part) for part in parts):
        raise HotplugVolumeError(f"{path[:200]!r} is not a cgroup path")
    with safepath.opened(point, ".", os.O_PATH | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS) as top:
        return safepath.openat2(
            top, "/".join(parts) or ".", os.O_PATH | os.O_DIRECTORY, resolve=safepath.NO_SYMLINKS
        )


def _read(cgroup: int, name: str) -> str:
    fd = safepath.openat2(cgroup, name, os.O_RDONLY, resolve=safepath.NO_SYMLINKS)
    try:
        with os.fdopen(fd, closefd=False) as stream:
            return stream.read(1 << 20)
    finally:
        os.close(fd)


def _write(cgroup: int, name: str, text: str) -> None:
    fd = safepath.openat2(cgroup, name, os.O_WRONLY, resolve=safepath.NO_SYMLINKS)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def allowed(cgroup: int, device: str) -> bool:
    """Whether the cgroup already allows the block device (by its own rule, or all devices)."""
    wanted = rule(device)
    return any(line.strip() in (wanted, *_ALLOW_ALL) for line in _read(cgroup, LIST).splitlines())


def allow(cgroup: int, device: str) -> None:
    _write(cgroup, ALLOW, rule(device))


def deny(cgroup: int, device: str) -> None:
    _write(cgroup, DENY, rule(device))
