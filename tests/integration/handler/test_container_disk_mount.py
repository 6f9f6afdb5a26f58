"""virt-handler's containerDisk mounts with real mounts: a "disk container" is a process chrooted into a
tmpfs holding the image (as a container is in its runtime's rootfs mount), announcing itself on its socket
in a pod's container-disks directory. The handler's helper runs for real, in this mount namespace."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubevirt.virt_handler.container_disk.mounter import ContainerDiskError, Mounter
from kubevirt_testing import pod_process

pytestmark = pytest.mark.timeout(60)

NODE = "node01"
IMAGE = b"QFI\xfb a test image"
DISK_CONTAINER = """
import os, signal, socket, sys
listener = socket.socket(socket.AF_UNIX)
listener.bind(sys.argv[1])
listener.listen(8)
os.chroot(sys.argv[2])
os.chdir("/")
print("ready", flush=True)
signal.pause()
"""


@dataclass
class Pod:
    uid: str
    volume: Path  # its container-disks emptyDir
    rootfs: Path  # the disk container's root file system (a tmpfs mount)


def _mounts_at(path: Path) -> list[str]:
    return [
        line for line in Path("/proc/self/mountinfo").read_text().splitlines() if line.split()[4] == str(path)
    ]


@pytest.fixture
def pods_dir() -> Iterator[Path]:
    # Short, like the handler's /pods: a unix socket path must stay under 108 bytes.
    path = Path(tempfile.mkdtemp(prefix="p", dir="/tmp"))
    yield path
    shutil.rmtree(path)


@pytest.fixture
def pod(tmp_path: Path, pods_dir: Path) -> Iterator[Pod]:
    uid = uuid.uuid4().hex[:12]
    volume = pods_dir / uid / "volumes" / "kubernetes.io~empty-dir" / "container-disks"
    volume.mkdir(parents=True)
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(rootfs)], check=True)
    (rootfs / "disk").mkdir()
    (rootfs / "disk" / "guest.qcow2").write_bytes(IMAGE)
    (rootfs / "other").mkdir()
    (rootfs / "other" / "kernel").write_bytes(b"kernel")
    # Hostile entries: a link that means <root>/etc/hostname inside the container, and a directory.
    (rootfs / "escape").symlink_to("/etc/hostname")
    (rootfs / "dir").mkdir()
    processes: list[subprocess.Popen[str]] = []

    def start(socket_name: str, *, cgroup_of: str = uid, namespaces: bool = True, at: Path = volume) -> None:
        """The disk container: by default a process of this pod (its cgroup, namespaces of its own)."""
        argv = [sys.executable, "-c", DISK_CONTAINER, str(at / socket_name), str(rootfs)]
        cgroups.add(cgroup_of)
        process = subprocess.Popen(
            pod_process.in_pod_namespaces(argv) if namespaces else argv,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=pod_process.join_cgroup(cgroup_of),
        )
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        processes.append(process)

    cgroups: set[str] = set()
    pod = Pod(uid, volume, rootfs)
    pod.start = start  # type: ignore[attr-defined]
    try:
        yield pod
    finally:
        for process in processes:
            pod_process.kill(process)
        for name in cgroups:
            pod_process.remove_cgroup(name)
        for target in sorted(volume.rglob("*"), reverse=True):
            while _mounts_at(target):
                subprocess.run(["umount", str(target)], check=False)
        subprocess.run(["umount", str(rootfs)], check=True)


@pytest.fixture
def mounter(tmp_path: Path, pods_dir: Path) -> Mounter:
    # No namespace switch: the test's mounts live in this process's mount namespace.
    return Mounter(pods_dir=pods_dir, host_pods_dir=pods_dir, state_dir=tmp_path / "state", namespace="")


def vmi(pod: Pod, *volumes: dict[str, Any], **firmware: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "vm1", "namespace": "ns1", "uid": "vmi-uid-1"},
        "spec": {"domain": {"firmware": firmware}, "volumes": list(volumes)},
        "status": {"activePods": {pod.uid: NODE}},
    }


def test_the_image_is_mounted_read_only_recorded_and_unmounted(
    pod: Pod, mounter: Mounter, tmp_path: Path
) -> None:
    subject = vmi(
        pod, {"name": "rootdisk", "containerDisk": {"image": "x"}}, {"name": "c", "cloudInitNoCloud": {}}
    )
    assert not mounter.mount(subject, NODE)  # no disk container yet: nothing done
    assert list(pod.volume.glob("*.img")) == []
    pod.start("disk_0.sock")  # type: ignore[attr-defined]
    assert mounter.mount(subject, NODE)
    target = pod.volume / "disk_0.img"
    assert target.read_bytes() == IMAGE
    assert len(_mounts_at(target)) == 1
    with pytest.raises(OSError, match="Read-only"):
        target.open("ab").close()
    record = json.loads((tmp_path / "state" / "vmi-uid-1.json").read_text())
    assert record == {"namespace": "ns1", "name": "vm1", "podUID": pod.uid, "targets": ["disk_0.img"]}
    assert mounter.recorded("ns1", "vm1") == ["vmi-uid-1"]

    mounter.mount(subject, NODE)  # a second sync mounts nothing more
    assert len(_mounts_at(target)) == 1

    # A restarted handler knows the mount only from its record.
    restarted = Mounter(
        pods_dir=pod.volume.parents[3],
        host_pods_dir=pod.volume.parents[3],
        state_dir=tmp_path / "state",
        namespace="",
    )
    restarted.unmount("vmi-uid-1")
    assert _mounts_at(target) == []
    assert target.read_bytes() == b""
    assert not (tmp_path / "state" / "vmi-uid-1.json").exists()
    restarted.unmount("vmi-uid-1")  # nothing recorded any more: nothing to do


def test_kernel_boot_artifacts_are_mounted_below_kernel_boot(pod: Pod, mounter: Mounter) -> None:
    subject = vmi(
        pod,
        kernelBoot={
            "container": {"image": "k", "kernelPath": "/other/kernel", "initrdPath": "/disk/guest.qcow2"}
        },
    )
    pod.start("kernel-boot.sock")  # type: ignore[attr-defined]
    mounter.mount(subject, NODE)
    assert (pod.volume / "kernel-boot" / "kernel").read_bytes() == b"kernel"
    assert (pod.volume / "kernel-boot" / "guest.qcow2").read_bytes() == IMAGE
    mounter.unmount("vmi-uid-1")
    assert _mounts_at(pod.volume / "kernel-boot" / "kernel") == []


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/escape", "No such file"),  # the link resolves inside the container's root, where nothing is
        ("/../../../../etc/hostname", "No such file"),  # .. stops at the container's root
        ("/dir", "not a regular file"),
    ],
)
def test_a_hostile_image_path_mounts_nothing_from_the_host(
    pod: Pod, mounter: Mounter, path: str, message: str
) -> None:
    subject = vmi(pod, {"name": "rootdisk", "containerDisk": {"image": "x", "path": path}})
    pod.start("disk_0.sock")  # type: ignore[attr-defined]
    with pytest.raises(ContainerDiskError, match=f"containerDisk rootdisk: .*{message}"):
        mounter.mount(subject, NODE)
    assert _mounts_at(pod.volume / "disk_0.img") == []


def test_a_link_planted_at_the_mount_point_is_refused(pod: Pod, mounter: Mounter, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"host file")
    (pod.volume / "disk_0.img").symlink_to(victim)
    subject = vmi(pod, {"name": "rootdisk", "containerDisk": {"image": "x"}})
    pod.start("disk_0.sock")  # type: ignore[attr-defined]
    with pytest.raises(ContainerDiskError, match="symlink"):
        mounter.mount(subject, NODE)
    assert _mounts_at(victim) == []
    assert victim.read_bytes() == b"host file"


def test_an_image_without_exactly_one_disk_file_is_refused(pod: Pod, mounter: Mounter) -> None:
    (pod.rootfs / "disk" / "second.img").write_bytes(b"2")
    subject = vmi(pod, {"name": "rootdisk", "containerDisk": {"image": "x"}})
    pod.start("disk_0.sock")  # type: ignore[attr-defined]
    with pytest.raises(ContainerDiskError, match="more than one file found in folder /disk"):
        mounter.mount(subject, NODE)


def test_a_mount_in_use_is_detached_and_its_reader_keeps_the_image(pod: Pod, mounter: Mounter) -> None:
    subject = vmi(pod, {"name": "rootdisk", "containerDisk": {"image": "x"}})
    pod.start("disk_0.sock")  # type: ignore[attr-defined]
    mounter.mount(subject, NODE)
    with (pod.volume / "disk_0.img").open("rb") as reader:  # as an exiting QEMU holds its backing file
        mounter.unmount("vmi-uid-1")
        assert _mounts_at(pod.volume / "disk_0.img") == []
        assert reader.read() == IMAGE


def test_the_helper_finds_and_enters_the_hosts_mount_namespace(
    pod: Pod, pods_dir: Path, tmp_path: Path
) -> None:
    # As in the handler's pod: the namespace is PID 1's, or the nearest ancestor's outside our own; here
    # (no container around the test) that is this very namespace, so the mount shows up right here.
    mounter = Mounter(pods_dir=pods_dir, host_pods_dir=pods_dir, state_dir=tmp_path / "state")
    subject = vmi(pod, {"name": "rootdisk", "containerDisk": {"image": "x"}})
    pod.start("disk_0.sock")  # type: ignore[attr-defined]
    mounter.mount(subject, NODE)
    assert (pod.volume / "disk_0.img").read_bytes() == IMAGE
    mounter.unmount("vmi-uid-1")
    assert _mounts_at(pod.volume / "disk_0.img") == []


def test_a_socket_link_to_a_host_socket_mounts_nothing(pod: Pod, mounter: Mounter, tmp_path: Path) -> None:
    # The pod links disk_0.sock to a socket a host process serves: followed, the host's root would be
    # taken for the container's and a host file mounted into the pod.
    host_side = tmp_path / "host"
    host_side.mkdir()
    pod.start("host.sock", namespaces=False, cgroup_of="not-a-pod", at=host_side)  # type: ignore[attr-defined]
    (pod.volume / "disk_0.sock").symlink_to(host_side / "host.sock")
    subject = vmi(pod, {"name": "rootdisk", "containerDisk": {"image": "x", "path": "/disk/guest.qcow2"}})
    with pytest.raises(ContainerDiskError, match=r"containerDisk rootdisk: .*refused, a symlink"):
        mounter.mount(subject, NODE)
    assert _mounts_at(pod.volume / "disk_0.img") == []


@pytest.mark.parametrize(
    ("start", "reason"),
    [
        ({"namespaces": False}, "pid namespace"),  # the pod's cgroup, the host's namespaces
        ({"cgroup_of": "another-pod"}, "is not in pod"),  # namespaces of its own, another pod's cgroup
    ],
)
def test_a_socket_served_by_a_process_not_of_the_pod_mounts_nothing(
    pod: Pod, mounter: Mounter, start: dict[str, Any], reason: str
) -> None:
    pod.start("disk_0.sock", **start)  # type: ignore[attr-defined]
    subject = vmi(pod, {"name": "rootdisk", "containerDisk": {"image": "x"}})
    with pytest.raises(ContainerDiskError, match=reason):
        mounter.mount(subject, NODE)
    assert _mounts_at(pod.volume / "disk_0.img") == []
