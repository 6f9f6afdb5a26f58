"""virt-handler's hotplug mounts with real mounts, devices and cgroups, in throwaway "pods".

A kubelet pods directory in /tmp holds a launcher pod and an attachment pod. The attachment pod's process
runs in namespaces of its own, in the pod's cgroup, serves ``hp.sock`` in its ``hotplug-disks`` volume and
has each Filesystem claim bind-mounted at ``/<volume>`` of its root, as the kubelet mounts the claim's CSI
directory (``volumes/kubernetes.io~csi/<pv>/mount``, a tmpfs here) into the container. A Block claim is a
loop device whose node the "container runtime" (the test) made in the attachment pod's
``hotplug-disks/<volume>/``. The launcher's process sits in a devices cgroup that denies every device, as a
container's does for those it was not given. The handler's helper runs for real, in this mount namespace.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError
from kubevirt.virt_handler.hotplug_disk.mounter import HotplugMounter, LauncherPod, run_hostops
from kubevirt_testing import pod_process
from kubevirt_testing.kubelet_pods import service_account_volume

pytestmark = pytest.mark.timeout(60)

IMAGE = b"QFI\xfb a hotplugged claim"
DEVICES = Path("/sys/fs/cgroup/devices")
needs_devices_cgroup = pytest.mark.skipif(
    not (DEVICES / "devices.allow").exists(), reason="needs the cgroup v1 devices hierarchy"
)
ATTACHMENT = """
import ctypes, os, signal, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
listener = socket.socket(socket.AF_UNIX)
listener.bind(sys.argv[1])
listener.listen(8)
rootfs = sys.argv[2]
for item in sys.argv[3:]:
    name, source = item.split("=", 1)
    point = os.path.join(rootfs, name)
    os.makedirs(point, exist_ok=True)
    if libc.mount(source.encode(), point.encode(), None, 0x1000, None) != 0:
        raise OSError(ctypes.get_errno(), "bind mount", point)
os.chroot(rootfs)
os.chdir("/")
print("ready", flush=True)
signal.pause()
"""
LAUNCHER = """
import errno, os, sys
print("ready", flush=True)
for line in sys.stdin:
    try:
        os.close(os.open(line.strip(), os.O_RDONLY))
        print("ok", flush=True)
    except OSError as err:
        print(errno.errorcode[err.errno], flush=True)
"""


def _mounts_at(path: Path) -> list[str]:
    return [
        line for line in Path("/proc/self/mountinfo").read_text().splitlines() if line.split()[4] == str(path)
    ]


def _disks(pods: Path, uid: str) -> Path:
    return pods / uid / "volumes" / "kubernetes.io~empty-dir" / "hotplug-disks"


@dataclass
class Node:
    pods: Path
    launcher_uid: str
    attach_uid: str
    tmp: Path
    processes: list[subprocess.Popen[str]] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)
    loops: list[str] = field(default_factory=list)
    launcher: subprocess.Popen[str] | None = None

    @property
    def target_dir(self) -> Path:
        return _disks(self.pods, self.launcher_uid)

    def claim(self, pv: str) -> Path:
        """A Filesystem claim published by the "kubelet": a tmpfs at the pod's CSI directory."""
        mount = self.pods / self.attach_uid / "volumes" / "kubernetes.io~csi" / pv / "mount"
        mount.mkdir(parents=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
        return mount

    def start_attachment(self, volumes: dict[str, Path], *, cgroup_of: str | None = None) -> None:
        """The attachment pod's process with ``volumes`` (name → kubelet directory) at ``/<name>``."""
        rootfs = self.tmp / f"rootfs-{len(self.processes)}"
        rootfs.mkdir()
        argv = [
            sys.executable,
            "-c",
            ATTACHMENT,
            str(_disks(self.pods, self.attach_uid) / "hp.sock"),
            str(rootfs),
        ]
        argv += [f"{name}={source}" for name, source in volumes.items()]
        owner = cgroup_of or self.attach_uid
        self.cgroups.append(owner)
        process = subprocess.Popen(
            pod_process.in_pod_namespaces(argv),
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=pod_process.join_cgroup(owner),
        )
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        self.processes.append(process)

    def block_claim(self, volume: str) -> os.stat_result:
        """A Block claim: a loop device, its node made where the runtime makes it for ``volumeDevices``."""
        backing = self.tmp / f"{volume}.raw"
        backing.write_bytes(IMAGE + bytes(65536))
        loop = subprocess.run(
            ["losetup", "--find", "--show", str(backing)], check=True, capture_output=True, text=True
        ).stdout.strip()
        self.loops.append(loop)
        device = os.stat(loop)
        source = _disks(self.pods, self.attach_uid) / volume
        source.mkdir()
        os.mknod(source / "claim-uid", stat.S_IFBLK, device.st_rdev)
        os.chmod(source / "claim-uid", 0o660)  # as the runtime copies the host node's mode
        return device

    @property
    def launcher_cgroup(self) -> Path:
        return DEVICES / pod_process.CGROUP_PARENT / f"pod{self.launcher_uid}" / "compute"

    def start_launcher(self) -> int:
        """The launcher's process, in a container cgroup that denies every device."""
        self.launcher_cgroup.mkdir(parents=True)
        procs = self.launcher_cgroup / "cgroup.procs"

        def join() -> None:
            procs.write_text(str(os.getpid()))

        self.launcher = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=join,
        )
        assert self.launcher.stdout is not None
        assert self.launcher.stdout.readline().strip() == "ready"
        (self.launcher_cgroup / "devices.deny").write_text("a")
        return self.launcher.pid

    def launcher_opens(self, path: Path | str) -> str:
        assert self.launcher is not None
        assert self.launcher.stdin is not None
        assert self.launcher.stdout is not None
        self.launcher.stdin.write(f"{path}\n")
        self.launcher.stdin.flush()
        return self.launcher.stdout.readline().strip()

    def rules(self) -> list[str]:
        return (self.launcher_cgroup / "devices.list").read_text().split("\n")[:-1]

    def vmi(self, *volumes: tuple[str, str]) -> dict[str, Any]:
        """A running VMI with hotplugged claims ``(name, volumeMode)`` attached by the attachment pod."""
        return {
            "metadata": {"name": "vm1", "namespace": "ns1", "uid": "vmi-uid-1"},
            "spec": {
                "volumes": [
                    {"name": name, "persistentVolumeClaim": {"claimName": name, "hotpluggable": True}}
                    for name, _ in volumes
                ]
            },
            "status": {
                "activePods": {self.launcher_uid: "node01"},
                "volumeStatus": [
                    {
                        "name": name,
                        "phase": "AttachedToNode",
                        "hotplugVolume": {"attachPodName": "hp-volume-x", "attachPodUID": self.attach_uid},
                        "persistentVolumeClaimInfo": {"claimName": name, "volumeMode": mode},
                    }
                    for name, mode in volumes
                ],
            },
        }

    def cleanup(self) -> None:
        for process in self.processes:
            pod_process.kill(process)
        if self.launcher is not None:
            self.launcher.kill()
            self.launcher.wait(10)
        for owner in self.cgroups:
            pod_process.remove_cgroup(owner)
        for cgroup in (self.launcher_cgroup, self.launcher_cgroup.parent):
            with contextlib.suppress(FileNotFoundError):
                cgroup.rmdir()
        for path in sorted(self.pods.rglob("*"), reverse=True):
            while _mounts_at(path):
                subprocess.run(["umount", "-l", str(path)], check=False)
        for loop in self.loops:
            subprocess.run(["losetup", "--detach", loop], check=False)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    # Short, like the handler's /pods: a unix socket path must stay under 108 bytes.
    pods = Path(tempfile.mkdtemp(prefix="p", dir="/tmp"))
    launcher_uid, attach_uid = uuid.uuid4().hex[:12], uuid.uuid4().hex[:12]
    _disks(pods, launcher_uid).mkdir(parents=True)
    _disks(pods, attach_uid).mkdir(parents=True)
    service_account_volume(pods, attach_uid, "ns1")  # the VMI's namespace
    found = Node(pods, launcher_uid, attach_uid, tmp_path)
    try:
        yield found
    finally:
        found.cleanup()
        shutil.rmtree(pods)


class CountingHostOps:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: dict[str, Any], namespace: str | None) -> list[dict[str, Any]]:
        self.calls += 1
        return run_hostops(request, namespace)


@pytest.fixture
def helper() -> CountingHostOps:
    return CountingHostOps()


@pytest.fixture
def mounter(node: Node, tmp_path: Path, helper: CountingHostOps) -> HotplugMounter:
    # No namespace switch: the test's mounts live in this process's mount namespace.
    return HotplugMounter(
        pods_dir=node.pods,
        host_pods_dir=node.pods,
        state_dir=tmp_path / "state",
        namespace="",
        hostops_runner=helper,
    )


def _no_launcher() -> int:
    raise AssertionError("a Filesystem claim needs no launcher process")


def test_a_filesystem_claim_is_bind_mounted_given_to_qemu_and_unmounted(
    node: Node, mounter: HotplugMounter, helper: CountingHostOps, tmp_path: Path
) -> None:
    claim = node.claim("pv-data")
    (claim / "disk.img").write_bytes(IMAGE)
    node.start_attachment({"data": claim})
    vmi = node.vmi(("data", "Filesystem"))
    launcher = LauncherPod(uid=node.launcher_uid, pid=_no_launcher)
    assert mounter.mount(vmi, launcher) == []
    target = node.target_dir / "data.img"
    assert target.read_bytes() == IMAGE
    assert len(_mounts_at(target)) == 1
    assert (target.stat().st_uid, target.stat().st_gid) == (107, 107)  # the claim's disk.img itself
    assert ((claim / "disk.img").stat().st_uid, (claim / "disk.img").stat().st_gid) == (107, 107)
    with target.open("r+b") as writer:  # the guest's writes reach the claim
        writer.write(b"written")
    assert (claim / "disk.img").read_bytes().startswith(b"written")
    assert mounter.mounted(vmi) == frozenset({"data"})
    record = json.loads((tmp_path / "state" / "vmi-uid-1").read_text())
    assert [entry["targetFile"] for entry in record["mountTargetEntries"]] == ["data.img"]

    calls = helper.calls
    assert mounter.mount(vmi, launcher) == []  # in place: no helper process at all
    assert helper.calls == calls
    assert len(_mounts_at(target)) == 1

    mounter.unmount(vmi, {"data"})  # still in the spec: stays
    assert len(_mounts_at(target)) == 1
    # A restarted handler knows the mount only from its record.
    restarted = HotplugMounter(
        pods_dir=node.pods, host_pods_dir=node.pods, state_dir=tmp_path / "state", namespace=""
    )
    restarted.unmount(vmi, set())
    assert _mounts_at(target) == []
    assert not target.exists()
    assert not (tmp_path / "state" / "vmi-uid-1").exists()
    assert mounter.mounted(vmi) == frozenset()
    assert (claim / "disk.img").read_bytes().startswith(b"written")


def test_the_helper_finds_and_enters_the_hosts_mount_namespace(node: Node, tmp_path: Path) -> None:
    # As in the handler's pod: the namespace is PID 1's, or the nearest ancestor's outside our own; here
    # (no container around the test) that is this very namespace, and the mounts are seen through its root.
    mounter = HotplugMounter(pods_dir=node.pods, host_pods_dir=node.pods, state_dir=tmp_path / "state")
    claim = node.claim("pv-data")
    (claim / "disk.img").write_bytes(IMAGE)
    node.start_attachment({"data": claim})
    vmi = node.vmi(("data", "Filesystem"))
    mounter.mount(vmi, LauncherPod(uid=node.launcher_uid, pid=_no_launcher))
    assert (node.target_dir / "data.img").read_bytes() == IMAGE
    assert mounter.mounted(vmi) == frozenset({"data"})
    mounter.unmount_all("vmi-uid-1")
    assert _mounts_at(node.target_dir / "data.img") == []


def test_a_mount_in_use_is_detached_and_its_reader_keeps_the_image(
    node: Node, mounter: HotplugMounter
) -> None:
    claim = node.claim("pv-data")
    (claim / "disk.img").write_bytes(IMAGE)
    node.start_attachment({"data": claim})
    vmi = node.vmi(("data", "Filesystem"))
    mounter.mount(vmi, LauncherPod(uid=node.launcher_uid, pid=_no_launcher))
    with (node.target_dir / "data.img").open("rb") as reader:  # as a QEMU still closing its disk
        mounter.unmount_all("vmi-uid-1")
        assert _mounts_at(node.target_dir / "data.img") == []
        assert reader.read() == IMAGE


def test_the_claim_is_the_one_the_attachment_pod_has_at_its_volumes_path(
    node: Node, mounter: HotplugMounter
) -> None:
    first, second = node.claim("pv-a"), node.claim("pv-b")
    (first / "disk.img").write_bytes(b"first claim")
    (second / "disk.img").write_bytes(b"second claim")
    node.start_attachment({"one": second, "two": first})  # the PV names say nothing of the volumes
    vmi = node.vmi(("one", "Filesystem"), ("two", "Filesystem"))
    mounter.mount(vmi, LauncherPod(uid=node.launcher_uid, pid=_no_launcher))
    assert (node.target_dir / "one.img").read_bytes() == b"second claim"
    assert (node.target_dir / "two.img").read_bytes() == b"first claim"


def _hostile_image(claim: Path, kind: str, victim: Path) -> None:
    image = claim / "disk.img"
    if kind == "symlink":
        image.symlink_to(victim)  # absolute: the host's file, were it followed
    elif kind == "relative symlink":
        image.symlink_to(Path("../../../../../..") / victim.relative_to("/"))
    elif kind == "fifo":
        os.mkfifo(image)
    elif kind == "device":
        os.mknod(image, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
    elif kind == "directory":
        image.mkdir()


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("symlink", "refused, a symlink"),
        ("relative symlink", "refused, a symlink"),
        ("fifo", "refused, a FIFO and not a regular file"),
        ("device", "refused, a character device and not a regular file"),
        ("directory", "refused, a directory and not a regular file"),
    ],
)
def test_a_claim_whose_image_is_not_a_file_mounts_nothing(
    node: Node, mounter: HotplugMounter, tmp_path: Path, kind: str, reason: str
) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"host file")
    owner = (victim.stat().st_uid, victim.stat().st_gid)
    claim = node.claim("pv-evil")
    _hostile_image(claim, kind, victim)
    node.start_attachment({"evil": claim})
    vmi = node.vmi(("evil", "Filesystem"))
    with pytest.raises(HotplugVolumeError) as raised:
        mounter.mount(vmi, LauncherPod(uid=node.launcher_uid, pid=_no_launcher))
    assert (
        str(raised.value)
        == f"failed to mount filesystem hotplug volume evil: disk.img of volume evil: {reason}"
    )
    assert _mounts_at(node.target_dir / "evil.img") == []
    assert victim.read_bytes() == b"host file"
    assert (victim.stat().st_uid, victim.stat().st_gid) == owner
    assert mounter.mounted(vmi) == frozenset()


def test_a_claim_without_its_image_is_a_warning(node: Node, mounter: HotplugMounter) -> None:
    claim = node.claim("pv-empty")
    node.start_attachment({"empty": claim})
    warnings = mounter.mount(
        node.vmi(("empty", "Filesystem")), LauncherPod(uid=node.launcher_uid, pid=_no_launcher)
    )
    assert warnings == [
        "failed to mount filesystem hotplug volume empty: disk.img of volume empty: no such file in the claim"
    ]


def test_a_link_planted_at_the_mount_point_is_refused(
    node: Node, mounter: HotplugMounter, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"host file")
    (node.target_dir / "data.img").symlink_to(victim)
    claim = node.claim("pv-data")
    (claim / "disk.img").write_bytes(IMAGE)
    node.start_attachment({"data": claim})
    with pytest.raises(
        HotplugVolumeError, match=r"hotplug-disks/data\.img in the launcher pod: refused, a symlink"
    ):
        mounter.mount(node.vmi(("data", "Filesystem")), LauncherPod(uid=node.launcher_uid, pid=_no_launcher))
    assert _mounts_at(victim) == []
    assert victim.read_bytes() == b"host file"


def test_a_volume_directory_the_kubelet_did_not_make_is_never_taken(
    node: Node, mounter: HotplugMounter
) -> None:
    # The attachment pod's volume is a directory outside its kubelet directories: no claim of the pod.
    outside = node.tmp / "outside"
    outside.mkdir()
    (outside / "disk.img").write_bytes(b"not a claim")
    node.start_attachment({"data": outside})
    vmi = node.vmi(("data", "Filesystem"))
    assert mounter.mount(vmi, LauncherPod(uid=node.launcher_uid, pid=_no_launcher)) == []
    assert _mounts_at(node.target_dir / "data.img") == []
    assert (node.target_dir / "data.img").read_bytes() == b""


def test_an_attachment_socket_linked_to_a_host_socket_mounts_nothing(
    node: Node, mounter: HotplugMounter
) -> None:
    claim = node.claim("pv-data")
    (claim / "disk.img").write_bytes(IMAGE)
    host_side = node.tmp / "host"
    host_side.mkdir()
    server = subprocess.Popen(
        [sys.executable, "-c", ATTACHMENT, str(host_side / "hp.sock"), str(node.tmp)],
        stdout=subprocess.PIPE,
        text=True,
    )
    node.processes.append(server)
    assert server.stdout is not None
    assert server.stdout.readline().strip() == "ready"
    (_disks(node.pods, node.attach_uid) / "hp.sock").symlink_to(host_side / "hp.sock")
    with pytest.raises(HotplugVolumeError, match=r"volume data: the attachment pod: .*refused, a symlink"):
        mounter.mount(node.vmi(("data", "Filesystem")), LauncherPod(uid=node.launcher_uid, pid=_no_launcher))
    assert _mounts_at(node.target_dir / "data.img") == []


def test_an_attachment_socket_served_by_another_pod_mounts_nothing(
    node: Node, mounter: HotplugMounter
) -> None:
    claim = node.claim("pv-data")
    (claim / "disk.img").write_bytes(IMAGE)
    node.start_attachment({"data": claim}, cgroup_of="another-pod")
    with pytest.raises(HotplugVolumeError, match="is not in pod"):
        mounter.mount(node.vmi(("data", "Filesystem")), LauncherPod(uid=node.launcher_uid, pid=_no_launcher))
    assert _mounts_at(node.target_dir / "data.img") == []


@needs_devices_cgroup
def test_a_block_claim_is_a_device_node_the_launcher_may_open_until_unmounted(
    node: Node, mounter: HotplugMounter
) -> None:
    device = node.block_claim("blk")
    node.start_attachment({})  # a Block claim too is taken only from a running attachment pod
    pid = node.start_launcher()
    rule = f"b {os.major(device.st_rdev)}:{os.minor(device.st_rdev)} rwm"
    target = node.target_dir / "blk"
    vmi = node.vmi(("blk", "Block"))
    launcher = LauncherPod(uid=node.launcher_uid, pid=lambda: pid)
    assert mounter.mount(vmi, launcher) == []
    info = target.lstat()
    assert stat.S_ISBLK(info.st_mode)
    assert info.st_rdev == device.st_rdev
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (107, 107, 0o660)
    assert node.rules() == [rule]
    assert node.launcher_opens(target) == "ok"
    assert mounter.mounted(vmi) == frozenset({"blk"})

    mounter.unmount(vmi, set())
    assert not target.exists()
    assert node.rules() == []
    assert node.launcher_opens(node.loops[0]) == errno.errorcode[errno.EPERM]
    assert mounter.mounted(vmi) == frozenset()


@needs_devices_cgroup
def test_a_rule_the_container_had_is_kept(node: Node, mounter: HotplugMounter) -> None:
    device = node.block_claim("blk")
    node.start_attachment({})  # a Block claim too is taken only from a running attachment pod
    pid = node.start_launcher()
    rule = f"b {os.major(device.st_rdev)}:{os.minor(device.st_rdev)} rwm"
    (node.launcher_cgroup / "devices.allow").write_text(rule)
    mounter.mount(node.vmi(("blk", "Block")), LauncherPod(uid=node.launcher_uid, pid=lambda: pid))
    mounter.unmount_all("vmi-uid-1")
    assert node.rules() == [rule]


@needs_devices_cgroup
def test_a_device_node_planted_by_the_launcher_is_refused(node: Node, mounter: HotplugMounter) -> None:
    device = node.block_claim("blk")
    node.start_attachment({})  # a Block claim too is taken only from a running attachment pod
    pid = node.start_launcher()
    # What a launcher allowed to make nodes could plant: another device under the claim's name.
    os.mknod(node.target_dir / "blk", stat.S_IFBLK | 0o666, os.makedev(7, 250))
    with pytest.raises(HotplugVolumeError) as raised:
        mounter.mount(node.vmi(("blk", "Block")), LauncherPod(uid=node.launcher_uid, pid=lambda: pid))
    claim = f"{os.major(device.st_rdev)}:{os.minor(device.st_rdev)}"
    assert str(raised.value) == (
        "failed to mount block hotplug volume blk: hotplug-disks/blk in the launcher pod: refused, "
        f"block device 7:250 and not the claim's block device {claim}"
    )
    assert node.rules() == []
    assert (node.target_dir / "blk").lstat().st_uid == 0


@needs_devices_cgroup
def test_a_link_in_place_of_the_claims_device_is_refused(node: Node, mounter: HotplugMounter) -> None:
    device = node.block_claim("blk")
    node.start_attachment({})  # a Block claim too is taken only from a running attachment pod
    pid = node.start_launcher()
    source = _disks(node.pods, node.attach_uid) / "blk"
    (source / "claim-uid").unlink()
    (source / "claim-uid").symlink_to(node.loops[0])
    with pytest.raises(HotplugVolumeError, match="hotplug-disks/blk: refused, it holds no block device"):
        mounter.mount(node.vmi(("blk", "Block")), LauncherPod(uid=node.launcher_uid, pid=lambda: pid))
    assert not (node.target_dir / "blk").exists()
    assert node.rules() == []
    assert device.st_rdev  # the device exists; only the link to it was refused


def test_an_attachment_pod_of_another_namespace_lends_nothing(
    node: Node, mounter: HotplugMounter, helper: CountingHostOps
) -> None:
    claim = node.claim("pv-data")
    (claim / "disk.img").write_bytes(IMAGE)
    node.start_attachment({"data": claim})
    vmi = node.vmi(("data", "Filesystem"))
    vmi["metadata"]["namespace"] = "intruder"  # a VMI of another namespace naming this pod in its status
    with pytest.raises(HotplugVolumeError, match="is in namespace ns1, not in the VMI's namespace intruder"):
        mounter.mount(vmi, LauncherPod(uid=node.launcher_uid, pid=_no_launcher))
    assert helper.calls == 0
    assert _mounts_at(node.target_dir / "data.img") == []


def test_a_migration_targets_volumes_are_found_in_place_after_the_take_over(
    node: Node, mounter: HotplugMounter, helper: CountingHostOps
) -> None:
    claim = node.claim("pv-data")
    (claim / "disk.img").write_bytes(IMAGE)
    node.start_attachment({"data": claim})
    vmi = node.vmi(("data", "Filesystem"))
    vmi["status"]["volumeStatus"][0]["hotplugVolume"]["attachPodUID"] = "source-node-pod"
    launcher = LauncherPod(uid=node.launcher_uid, pid=_no_launcher)
    assert mounter.mount(vmi, launcher, from_pod=node.attach_uid) == []
    target = node.target_dir / "data.img"
    assert target.read_bytes() == IMAGE
    calls = helper.calls
    # The node's VM controller, syncing the VMI into the same pod after the take-over: nothing to do.
    assert mounter.mount(vmi, launcher) == []
    assert helper.calls == calls
    assert len(_mounts_at(target)) == 1
    mounter.unmount_all("vmi-uid-1")  # as a failed migration's target
    assert _mounts_at(target) == []
