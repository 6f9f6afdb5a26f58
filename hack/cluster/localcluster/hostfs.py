"""Mounts and cgroups the cluster leaves on the host: found by where they are, removed at cluster-down."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
# The kubelet (cgroupfs driver) puts every pod under this cgroup in each hierarchy.
POD_CGROUP = "kubepods"
# Further nodes' kubelets run with --cgroup-root /kubevirt-py-node<N>.
NODE_CGROUP_ROOTS = "kubevirt-py-node*"


def _mounts() -> list[tuple[str, list[str]]]:
    """Each mount this process sees: its mount point and its optional fields (``shared:N``, ...)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" - ")[0].split()
        found.append((fields[4].encode().decode("unicode_escape"), fields[6:]))
    return found


def mounts_under(directory: Path) -> list[Path]:
    """Mount points at or below ``directory``, deepest first."""
    prefix = str(directory.resolve()) if directory.exists() else str(directory)
    found = [Path(point) for point, _ in _mounts() if point == prefix or point.startswith(prefix + "/")]
    return sorted(set(found), key=lambda path: len(path.parts), reverse=True)


def make_shared(directory: Path) -> None:
    """Makes ``directory`` a shared mount (a bind mount onto itself first), as a host whose init makes ``/``
    rshared has it: the kubelet allows Bidirectional propagation only from shared host paths, and a
    container's HostToContainer volume sees later mounts below it only then."""
    directory.mkdir(parents=True, exist_ok=True)
    if Path(directory.resolve()) not in mounts_under(directory):
        subprocess.run(["mount", "--bind", str(directory), str(directory)], check=True, capture_output=True)
    subprocess.run(["mount", "--make-rshared", str(directory)], check=True, capture_output=True)


def _is_shared(mount_point: str) -> bool:
    """Whether the mount at ``mount_point`` (as this process sees it) belongs to a peer group."""
    return any(
        point == mount_point and any(tag.startswith("shared:") for tag in tags) for point, tags in _mounts()
    )


def make_root_shared(marker: Path) -> None:
    """Makes ``/`` a shared mount, as systemd makes every real node's: the container runtime refuses a
    Bidirectional host path (virt-handler's ``/var/run/kubevirt``) whose mount is not shared, and it looks
    the mount up without resolving links. ``marker`` records that it was private, for :func:`restore_root`."""
    if _is_shared("/"):
        return
    subprocess.run(["mount", "--make-shared", "/"], check=True, capture_output=True)
    marker.write_text("/ was a private mount before the cluster made it shared\n")


def restore_root(marker: Path) -> None:
    """Makes ``/`` private again if :func:`make_root_shared` changed it."""
    if marker.exists():
        subprocess.run(["mount", "--make-private", "/"], check=True, capture_output=True)
        marker.unlink()


def unmount_all(directory: Path) -> list[Path]:
    unmounted = []
    for _ in range(5):  # stacked mounts need several rounds
        mounts = mounts_under(directory)
        if not mounts:
            break
        for mount in mounts:
            result = subprocess.run(["umount", str(mount)], capture_output=True, check=False)
            if result.returncode != 0:
                subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)
            unmounted.append(mount)
    return unmounted


def _hierarchies() -> list[Path]:
    """The mounted cgroup hierarchies (v1 controllers, named ones, the unified one), each once."""
    found = {path.resolve() for path in CGROUP_ROOT.iterdir() if path.is_dir() and os.path.ismount(path)}
    return sorted(found)


def cgroup_root_dirs(root: str) -> list[Path]:
    return [h / root.lstrip("/") for h in _hierarchies() if (h / root.lstrip("/")).is_dir()]


def make_cgroup_root(root: str) -> None:
    """A kubelet's --cgroup-root in every hierarchy (the kubelet requires it to exist); a new cpuset
    group starts with no CPUs or memory nodes, so it gets its parent's."""
    for hierarchy in _hierarchies():
        directory = hierarchy / root.lstrip("/")
        directory.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (directory / name).exists() and not (directory / name).read_text().strip():
                (directory / name).write_text((hierarchy / name).read_text())


def remove_cgroup_root(root: str) -> None:
    for directory in cgroup_root_dirs(root):
        _remove_tree(directory)


def pod_cgroups() -> list[Path]:
    """Every kubelet's pod cgroups: node 1's at the top of each hierarchy, further nodes' below theirs."""
    found = {path for path in CGROUP_ROOT.glob(f"*/{POD_CGROUP}") if path.is_dir()}
    found |= {path for path in CGROUP_ROOT.glob(f"*/{NODE_CGROUP_ROOTS}/{POD_CGROUP}") if path.is_dir()}
    return sorted(found)


def remove_pod_cgroups() -> list[Path]:
    """Removes the (empty by now) pod cgroup trees, leaves first."""
    return [top for top in pod_cgroups() if _remove_tree(top)]


def _remove_tree(top: Path) -> bool:
    for directory in sorted(
        (p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
    ):
        try:
            directory.rmdir()
        except OSError:
            continue
    try:
        top.rmdir()
    except OSError:
        return False
    return True


def pod_processes() -> list[int]:
    """PIDs still in the kubelet's pod cgroups (containers whose runtime is gone)."""
    pids: set[int] = set()
    for top in pod_cgroups():
        for procs in top.rglob("cgroup.procs"):
            try:
                pids.update(int(pid) for pid in procs.read_text().split())
            except OSError:
                continue
    return sorted(pids)
