"""A non-root launcher's devices, disks and migration sockets given to its user, in a throwaway pod root with
real device nodes (made with mknod, so root is needed): KubeVirt's list and conditions, links refused and
their targets untouched, root VMIs left alone."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller import RequeueAfter, Store
from kubevirt.podroot import PodRoot
from kubevirt.virt_handler.host_disks import HostDisks, create_images, images_to_make
from kubevirt.virt_handler.migration import MigrationSource, MigrationTarget
from kubevirt.virt_handler.migration_proxy import ProxyManager, bind_unix_in_pod
from kubevirt.virt_handler.pod_ownership import PodOwnership, PodOwnershipError, claim_pod
from kubevirt.virt_handler.pod_sockets import PodSocketError
from kubevirt.virt_handler.vm_controller import VMController
from kubevirt_testing.events import RecordedEvents
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.launcher_socket import launcher_socket

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(os.geteuid() != 0, reason="device nodes and ownership changes need root"),
]

JSON = dict[str, Any]
USER = 107
NODE = "node01"
POD_UID = "pod-1"
DISKS = "run/kubevirt-private/vmi-disks"  # /var/run links to /run in the pod, as in Debian-based images
VMI_DISKS = "/var/run/kubevirt-private/vmi-disks"
PROXY_DIR = "/var/run/kubevirt/migrationproxy"
CHAR_DEVICES = {
    "dev/kvm": (10, 232),
    "dev/net/tun": (10, 200),
    "dev/vhost-net": (10, 238),
    "dev/vhost-vsock": (10, 241),
}


def owner(path: Path) -> tuple[int, int]:
    info = os.lstat(path)
    return info.st_uid, info.st_gid


def mknod(path: Path, kind: int, major: int, minor: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(path, 0o600 | kind, os.makedev(major, minor))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A launcher pod's root: its /dev with the devices KubeVirt's device plugins give, and vmi-disks."""
    pod = tmp_path / "pod"
    for relative, (major, minor) in CHAR_DEVICES.items():
        mknod(pod / relative, stat.S_IFCHR, major, minor)
    (pod / DISKS).mkdir(parents=True)
    (pod / "var").mkdir()
    os.symlink("/run", pod / "var/run")
    return pod


def make_vmi(user: Any = USER, *, devices: JSON | None = None, volumes: list[JSON] | None = None) -> JSON:
    return {
        "metadata": {
            "name": "vm",
            "namespace": "default",
            "uid": "vmi-uid",
            "labels": {"kubevirt.io/nodeName": NODE},
        },
        "spec": {
            "domain": {
                "devices": {"interfaces": [{"name": "default", "masquerade": {}}]}
                if devices is None
                else devices
            },
            "volumes": volumes or [],
        },
        "status": {"phase": "Scheduled", "activePods": {POD_UID: NODE}, "runtimeUser": user},
    }


def claim_status(name: str, mode: str) -> JSON:
    return {
        "name": name,
        "persistentVolumeClaimInfo": {"claimName": name, "volumeMode": mode, "capacity": {"storage": "1Gi"}},
    }


def test_a_non_root_launcher_gets_kubevirts_devices_and_disks(root: Path) -> None:
    for volume in ("host", "fresh", "fs-claim"):
        (root / DISKS / volume).mkdir()
    (root / DISKS / "host/host.img").write_bytes(b"image")
    (root / DISKS / "fs-claim/disk.img").write_bytes(b"image")
    mknod(root / "dev/raw", stat.S_IFBLK, 7, 0)
    mknod(root / "dev/dv-raw", stat.S_IFBLK, 7, 1)
    vmi = make_vmi(
        devices={"interfaces": [{"name": "default", "masquerade": {}}], "autoattachVSOCK": True},
        volumes=[
            {"name": "host", "hostDisk": {"path": "/data/host.img", "type": "Disk"}},
            {
                "name": "fresh",
                "hostDisk": {"path": "/data/fresh.img", "type": "DiskOrCreate", "capacity": "16Mi"},
            },
            {"name": "fs-claim", "persistentVolumeClaim": {"claimName": "fs-claim"}},
            {"name": "raw", "persistentVolumeClaim": {"claimName": "raw"}},
            {"name": "dv-raw", "dataVolume": {"name": "dv-raw"}},
            {"name": "boot", "containerDisk": {"image": "example"}},
        ],
    )
    vmi["status"]["volumeStatus"] = [
        claim_status("fs-claim", "Filesystem"),
        claim_status("raw", "Block"),
        claim_status("dv-raw", "Block"),
    ]

    # As virt-handler does first: the missing DiskOrCreate image is made, as the qemu user's.
    made = create_images(
        PodRoot(root), images_to_make(vmi), toleration=10, reserve=131072, tolerated=lambda _message: None
    )
    assert made == ["/data/fresh.img"]
    changed = claim_pod(PodRoot(root), vmi)

    assert changed == [
        "/dev/kvm",
        "/dev/vhost-vsock",
        "/dev/raw",
        f"{VMI_DISKS}/host/host.img",
        f"{VMI_DISKS}/fs-claim/disk.img",
        "/dev/vhost-net",
        "/dev/net/tun",
    ]
    for relative in (
        *CHAR_DEVICES,
        "dev/raw",
        f"{DISKS}/host/host.img",
        f"{DISKS}/fresh/fresh.img",
        f"{DISKS}/fs-claim/disk.img",
    ):
        assert owner(root / relative) == (USER, USER), relative
    # KubeVirt gives a block DataVolume's device no owner, nor anything on the way.
    for relative in (
        "dev/dv-raw",
        "dev",
        "dev/net",
        DISKS,
        f"{DISKS}/host",
        f"{DISKS}/fresh",
        f"{DISKS}/fs-claim",
    ):
        assert owner(root / relative) == (0, 0), relative
    assert claim_pod(PodRoot(root), vmi) == []  # already theirs: nothing changes again


def test_claims_kubevirt_does_not_take_for_host_disks_are_left(root: Path) -> None:
    for volume in ("missing", "hotplugged", "shared-fs", "unknown"):
        (root / DISKS / volume).mkdir()
        (root / DISKS / volume / "disk.img").write_bytes(b"image")
    mknod(root / "dev/no-status", stat.S_IFBLK, 7, 2)
    vmi = make_vmi(
        devices={"autoattachPodInterface": False, "filesystems": [{"name": "shared-fs", "virtiofs": {}}]},
        volumes=[
            # A Disk image not there is the launcher's to report: its directory stays as it is.
            {"name": "missing", "hostDisk": {"path": "/data/missing.img", "type": "Disk"}},
            {"name": "hotplugged", "persistentVolumeClaim": {"claimName": "hotplugged"}},
            {"name": "shared-fs", "persistentVolumeClaim": {"claimName": "shared-fs"}},
            {"name": "unknown", "dataVolume": {"name": "unknown"}},
            # No claim status (virt-controller writes none here): the pod's block device tells.
            {"name": "no-status", "persistentVolumeClaim": {"claimName": "no-status"}},
            {"name": "net", "persistentVolumeClaim": {"claimName": "named-like-a-dev-directory"}},
        ],
    )
    vmi["status"]["volumeStatus"] = [
        {**claim_status("hotplugged", "Filesystem"), "hotplugVolume": {}},
        claim_status("shared-fs", "Filesystem"),
    ]
    assert claim_pod(PodRoot(root), vmi) == ["/dev/kvm", "/dev/no-status"]
    for volume in ("missing", "hotplugged", "shared-fs", "unknown"):
        assert owner(root / DISKS / volume) == (0, 0)
        assert owner(root / DISKS / volume / "disk.img") == (0, 0)


@pytest.mark.parametrize("user", [0, None, "absent"])
def test_a_root_vmi_is_left_alone(root: Path, user: Any) -> None:
    vmi = make_vmi(user, devices={"interfaces": [{"name": "default"}], "autoattachVSOCK": True})
    if user == "absent":
        del vmi["status"]["runtimeUser"]
    assert claim_pod(PodRoot(root), vmi) == []

    def no_pod(_socket: Path) -> PodRoot:
        raise AssertionError("a root VMI's pod is not looked up")

    assert PodOwnership(pod_root=no_pod).claim(vmi, Path("/nowhere")) == []
    assert all(owner(root / relative) == (0, 0) for relative in CHAR_DEVICES)


def test_the_old_non_root_annotation_gives_kubevirts_qemu_user(root: Path) -> None:
    vmi = make_vmi(0)
    vmi["metadata"]["annotations"] = {"kubevirt.io/nonroot": ""}
    assert "/dev/net/tun" in claim_pod(PodRoot(root), vmi)
    assert owner(root / "dev/net/tun") == (107, 107)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host file a pod's link points at (by its absolute host path)."""
    path = tmp_path / "host-secret"
    path.write_bytes(b"secret")
    return path


def _link_device(root: Path, outside: Path) -> None:
    os.unlink(root / "dev/net/tun")
    os.symlink(outside, root / "dev/net/tun")


def _link_device_in_pod(root: Path, outside: Path) -> None:
    os.unlink(root / "dev/net/tun")
    (root / "etc").mkdir()
    (root / "etc/shadow").write_bytes(b"pod secret")
    os.symlink("/etc/shadow", root / "dev/net/tun")


def _link_device_dir(root: Path, outside: Path) -> None:
    elsewhere = root / "elsewhere"
    shutil.move(root / "dev/net", elsewhere)
    os.symlink("/elsewhere", root / "dev/net")


def _link_optional_device(root: Path, outside: Path) -> None:
    os.unlink(root / "dev/kvm")
    os.symlink(outside, root / "dev/kvm")


def _link_block_device(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "dev/raw")


def _link_image(root: Path, outside: Path) -> None:
    (root / DISKS / "host").mkdir()
    os.symlink(outside, root / DISKS / "host/host.img")


def _link_image_dir(root: Path, outside: Path) -> None:
    os.symlink(outside.parent, root / DISKS / "host")


@pytest.mark.parametrize(
    ("plant", "named"),
    [
        (_link_device, "/dev/net/tun"),
        (_link_device_in_pod, "/dev/net/tun"),
        (_link_device_dir, "/dev/net/tun"),
        (_link_optional_device, "/dev/kvm"),
        (_link_block_device, "/dev/raw (spec.volumes[1].persistentVolumeClaim)"),
        (_link_image, "spec.volumes[0].hostDisk"),
        (_link_image_dir, "spec.volumes[0].hostDisk"),
    ],
)
def test_a_link_is_refused_and_what_it_points_at_keeps_its_owner(
    tmp_path: Path, root: Path, outside: Path, plant: Any, named: str
) -> None:
    plant(root, outside)
    host = root / DISKS / "host"
    if not (host.exists() or host.is_symlink()):
        host.mkdir()
        (host / "host.img").write_bytes(b"image")
    vmi = make_vmi(
        volumes=[
            {"name": "host", "hostDisk": {"path": "/data/host.img", "type": "Disk"}},
            {"name": "raw", "persistentVolumeClaim": {"claimName": "raw"}},
        ]
    )
    vmi["status"]["volumeStatus"] = [claim_status("raw", "Block")]

    # What is given before the refused link, as it should be: the pod's own /dev and a plain image.
    image = host / "host.img"
    given = set() if host.is_symlink() or image.is_symlink() else {image}

    def owners() -> dict[Path, tuple[int, int]]:
        return {
            path: owner(path)
            for path in tmp_path.rglob("*")
            if not path.is_relative_to(root / "dev") and path not in given
        }

    before = owners()
    with pytest.raises(PodOwnershipError, match="refused") as refused:
        claim_pod(PodRoot(root), vmi)

    assert named in str(refused.value)
    assert owners() == before
    assert owner(outside) == (0, 0)
    assert outside.read_bytes() == b"secret"


def test_missing_devices_are_skipped_only_where_kubevirt_allows(root: Path) -> None:
    for relative in ("dev/kvm", "dev/vhost-net"):
        os.unlink(root / relative)  # as under emulation: the pod asks for neither
    assert claim_pod(PodRoot(root), make_vmi()) == ["/dev/net/tun"]

    os.unlink(root / "dev/vhost-vsock")
    with pytest.raises(PodOwnershipError, match="/dev/vhost-vsock: not in the pod"):
        claim_pod(PodRoot(root), make_vmi(devices={"interfaces": [], "autoattachVSOCK": True}))

    os.unlink(root / "dev/net/tun")
    with pytest.raises(PodOwnershipError, match="/dev/net/tun: not in the pod"):
        claim_pod(PodRoot(root), make_vmi(devices={}))  # a pod interface is attached by default
    # No interface and none attached: no tap, so no tun needed.
    assert claim_pod(PodRoot(root), make_vmi(devices={"autoattachPodInterface": False})) == []


def test_vhost_net_is_given_only_for_a_virtio_interface(root: Path) -> None:
    vmi = make_vmi(devices={"interfaces": [{"name": "default", "masquerade": {}, "model": "e1000"}]})
    assert claim_pod(PodRoot(root), vmi) == ["/dev/kvm", "/dev/net/tun"]
    assert owner(root / "dev/vhost-net") == (0, 0)


def test_something_else_in_a_devices_place_is_refused(root: Path) -> None:
    os.unlink(root / "dev/net/tun")
    (root / "dev/net/tun").write_bytes(b"")
    with pytest.raises(PodOwnershipError, match="/dev/net/tun: not a character device"):
        claim_pod(PodRoot(root), make_vmi())
    assert owner(root / "dev/net/tun") == (0, 0)

    mknod(root / "dev/raw", stat.S_IFCHR, 1, 3)
    vmi = make_vmi(devices={}, volumes=[{"name": "raw", "persistentVolumeClaim": {"claimName": "raw"}}])
    vmi["status"]["volumeStatus"] = [claim_status("raw", "Block")]
    vmi["spec"]["domain"]["devices"] = {"autoattachPodInterface": False}
    with pytest.raises(
        PodOwnershipError, match=r"/dev/raw \(spec.volumes\[0\].persistentVolumeClaim\): not a block"
    ):
        claim_pod(PodRoot(root), vmi)


def test_a_host_disk_directory_missing_from_the_pod_names_the_volume(root: Path) -> None:
    vmi = make_vmi(volumes=[{"name": "host", "hostDisk": {"path": "/data/host.img", "type": "DiskOrCreate"}}])
    with pytest.raises(
        PodOwnershipError, match=r"spec.volumes\[0\].hostDisk: .*/vmi-disks/host is not mounted"
    ):
        claim_pod(PodRoot(root), vmi)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda vmi: vmi["status"].update(runtimeUser="107"), "status.runtimeUser"),
        (lambda vmi: vmi["status"].update(runtimeUser=-1), "status.runtimeUser"),
        (lambda vmi: vmi["status"].update(runtimeUser=True), "status.runtimeUser"),
        (
            lambda vmi: vmi["spec"].update(volumes=[{"name": "../x", "hostDisk": {"path": "/x"}}]),
            r"spec.volumes\[0\].name",
        ),
        (
            lambda vmi: vmi["spec"].update(volumes=[{"name": "x", "hostDisk": {}}]),
            r"spec.volumes\[0\].hostDisk.path",
        ),
        (
            lambda vmi: vmi["spec"].update(volumes=[{"name": "x", "hostDisk": {"path": "/"}}]),
            r"spec.volumes\[0\].hostDisk.path",
        ),
        (
            lambda vmi: vmi["spec"]["domain"]["devices"].update(interfaces={}),
            "spec.domain.devices.interfaces",
        ),
        (
            lambda vmi: vmi["spec"]["domain"]["devices"].update(autoattachVSOCK="yes"),
            "spec.domain.devices.autoattachVSOCK",
        ),
    ],
)
def test_bad_input_names_its_field_and_changes_nothing(root: Path, change: Any, field: str) -> None:
    vmi = make_vmi()
    change(vmi)
    with pytest.raises(PodOwnershipError, match=field):
        claim_pod(PodRoot(root), vmi)
    assert all(owner(root / relative) == (0, 0) for relative in CHAR_DEVICES)


# -- where the handler does it ------------------------------------------------------------------------


class FakeLauncher:
    """Records each command with the owner /dev/net/tun had when it came."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.calls: list[tuple[str, tuple[int, int]]] = []
        self.domain: JSON | None = None

    def _record(self, command: str) -> None:
        self.calls.append((command, owner(self.root / "dev/net/tun")))

    def sync_vmi(self, vmi: JSON, options: Any = None) -> None:
        self._record("SyncVirtualMachine")
        self.domain = {"Spec": {}, "Status": {"Status": "Running", "Reason": "Booted"}}

    def vmi_command(self, command: str, vmi: JSON) -> None:
        self._record(command)

    def migrate_vmi(self, vmi: Mapping[str, Any], options: Mapping[str, Any]) -> None:
        self._record("MigrateVirtualMachine")

    def get_domain(self) -> JSON | None:
        return self.domain

    def close(self) -> None:
        pass


@pytest.fixture
def pods_dir(tmp_path: Path) -> Iterator[Path]:
    with launcher_socket(tmp_path / "pods", POD_UID, listening=False):
        yield tmp_path / "pods"


def _vm_controller(
    pods_dir: Path, root: Path, vmi: JSON, pod_root: Callable[[Path], PodRoot] | None = None
) -> tuple[VMController, FakeKubeApi, FakeLauncher, RecordedEvents]:
    api, store, launcher, events = FakeKubeApi(), Store[JSON](), FakeLauncher(root), RecordedEvents()
    store.upsert(api.add(VIRTUAL_MACHINE_INSTANCES, vmi))
    controller = VMController(
        api=api,
        events=events,
        vmi_store=store,
        node=NODE,
        pods_dir=pods_dir,
        connect=lambda _socket: launcher,
        ownership=PodOwnership(pod_root=pod_root or (lambda _socket: PodRoot(root))),
        host_disks=HostDisks(events=events, pod_root=pod_root or (lambda _socket: PodRoot(root))),
    )
    return controller, api, launcher, events


def test_the_vm_controller_gives_the_devices_before_the_first_sync(pods_dir: Path, root: Path) -> None:
    controller, _, launcher, _ = _vm_controller(pods_dir, root, make_vmi())
    with contextlib.suppress(RequeueAfter):
        controller.reconcile("default/vm")
    assert launcher.calls == [("SyncVirtualMachine", (USER, USER))]
    assert launcher.domain is not None  # started: the next reconcile reports it


def test_the_vm_controller_makes_the_images_before_giving_them_and_syncing(
    pods_dir: Path, root: Path
) -> None:
    (root / DISKS / "fresh").mkdir()
    volume = {
        "name": "fresh",
        "hostDisk": {"path": "/data/fresh.img", "type": "DiskOrCreate", "capacity": "16Mi"},
    }
    controller, _, launcher, _ = _vm_controller(pods_dir, root, make_vmi(volumes=[volume]))
    with contextlib.suppress(RequeueAfter):
        controller.reconcile("default/vm")
    assert launcher.calls == [("SyncVirtualMachine", (USER, USER))]
    assert owner(root / DISKS / "fresh/fresh.img") == (USER, USER)
    assert (root / DISKS / "fresh/fresh.img").stat().st_size == 16 << 20


def test_a_failure_is_a_warning_event_and_synchronized_false_and_no_sync(pods_dir: Path, root: Path) -> None:
    os.unlink(root / "dev/net/tun")
    controller, api, launcher, events = _vm_controller(pods_dir, root, make_vmi())
    with contextlib.suppress(RequeueAfter):
        controller.reconcile("default/vm")
    assert launcher.calls == []
    [(event_type, reason, message)] = events.seen
    assert (event_type, reason) == ("Warning", "SyncFailed")
    assert "/dev/net/tun" in message
    [synchronized] = [
        c
        for c in api.get(VIRTUAL_MACHINE_INSTANCES, "default", "vm")["status"]["conditions"]
        if c["type"] == "Synchronized"
    ]
    assert (synchronized["status"], synchronized["message"]) == ("False", message)


def test_a_launcher_pod_that_cannot_be_verified_is_a_failure_too(pods_dir: Path, root: Path) -> None:
    def refused(_socket: Path) -> PodRoot:
        raise PodSocketError("the process behind the socket is not in the pod")

    controller, _, launcher, events = _vm_controller(pods_dir, root, make_vmi(), pod_root=refused)
    with contextlib.suppress(RequeueAfter):
        controller.reconcile("default/vm")
    assert launcher.calls == []
    assert events.seen[0][1:] == (
        "SyncFailed",
        "the launcher's pod: the process behind the socket is not in the pod",
    )


def _migrating_vmi(user: int) -> JSON:
    vmi = make_vmi(user)
    vmi["metadata"]["labels"]["kubevirt.io/migrationTargetNodeName"] = "node02"
    vmi["status"].update(
        phase="Running",
        nodeName=NODE,
        migrationState={"migrationUid": "mig-1", "sourceNode": NODE, "targetNode": "node02"},
    )
    return vmi


def test_the_migration_target_gives_the_devices_before_preparing(pods_dir: Path, root: Path) -> None:
    api, store, launcher = FakeKubeApi(), Store[JSON](), FakeLauncher(root)
    vmi = _migrating_vmi(USER)
    vmi["status"]["activePods"] = {POD_UID: "node02"}
    (root / DISKS / "fs-claim").mkdir()
    vmi["spec"]["volumes"] = [{"name": "fs-claim", "persistentVolumeClaim": {"claimName": "fs-claim"}}]
    vmi["status"]["volumeStatus"] = [claim_status("fs-claim", "Filesystem")]
    store.upsert(api.add(VIRTUAL_MACHINE_INSTANCES, vmi))
    proxies = ProxyManager(listen_address="127.0.0.1")
    target = MigrationTarget(
        node="node02",
        vmi_store=store,
        address="127.0.0.1",
        ownership=PodOwnership(pod_root=lambda _socket: PodRoot(root)),
        host_disks=HostDisks(events=RecordedEvents(), pod_root=lambda _socket: PodRoot(root)),
        api=api,
        events=RecordedEvents(),
        pods_dir=pods_dir,
        connect=lambda _socket: launcher,
        proxies=proxies,
        pod_root=lambda _socket: PodRoot(root),
    )
    try:
        with contextlib.suppress(RequeueAfter):
            target.reconcile("default/vm")
    finally:
        proxies.shut_down()
    assert launcher.calls[0] == ("SyncMigrationTarget", (USER, USER))
    assert owner(root / DISKS / "fs-claim/disk.img") == (USER, USER)  # made before, as on a start


# -- migration proxy sockets --------------------------------------------------------------------------

CONNECT = """
import socket, sys
client = socket.socket(socket.AF_UNIX)
try:
    client.connect(sys.argv[1])
except OSError as err:
    print(err.__class__.__name__)
else:
    print("connected")
"""


def connect_as(user: int, directory: Path, name: str) -> str:
    """What a process of ``user`` (as the launcher's libvirt and QEMU are) gets connecting to the socket."""
    done = subprocess.run(
        ["/usr/bin/python3", "-c", CONNECT, name],
        cwd=directory,  # relative: the socket's full path may be too long for an address
        user=user,
        group=user,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def open_root() -> Iterator[Path]:
    """A pod root others may walk through, as a pod's share emptyDir is (pytest's tmp_path is root's)."""
    path = Path(tempfile.mkdtemp(prefix="pod", dir="/tmp"))
    os.chmod(path, 0o755)
    (path / "var/run/kubevirt").mkdir(parents=True)
    os.chmod(path / "var/run/kubevirt", 0o777)
    for parent in (path / "var", path / "var/run"):
        os.chmod(parent, 0o755)
    yield path
    shutil.rmtree(path)


def test_a_proxy_socket_for_a_non_root_launcher_is_its_users(open_root: Path) -> None:
    # A fresh pod: the handler makes the directory as well.
    listener = bind_unix_in_pod(PodRoot(open_root), PROXY_DIR, "uid-source.sock", owner=USER)
    try:
        directory = open_root / PROXY_DIR.lstrip("/")
        assert owner(directory / "uid-source.sock") == (USER, USER)
        assert connect_as(USER, directory, "uid-source.sock") == "connected"
    finally:
        listener.close()
    # Without an owner the socket stays root's, and the launcher's user is refused.
    listener = bind_unix_in_pod(PodRoot(open_root), PROXY_DIR, "root-source.sock")
    try:
        assert connect_as(USER, directory, "root-source.sock") == "PermissionError"
    finally:
        listener.close()


@pytest.mark.parametrize("user", [USER, 0])
def test_the_migration_source_binds_its_sockets_for_the_launchers_user(
    open_root: Path, pods_dir: Path, user: int
) -> None:
    api, launcher = FakeKubeApi(), FakeLauncher(open_root)
    mknod(open_root / "dev/net/tun", stat.S_IFCHR, 10, 200)
    launcher.domain = {"Spec": {}, "Status": {"Status": "Running", "Reason": "Booted"}}
    vmi = _migrating_vmi(user)
    vmi["status"]["migrationState"].update(
        targetNodeAddress="127.0.0.1", targetDirectMigrationNodePorts={"40001": 0, "40002": 49152}
    )
    vmi = api.add(VIRTUAL_MACHINE_INSTANCES, vmi)
    proxies = ProxyManager(listen_address="127.0.0.1")
    source = MigrationSource(
        api=api,
        events=RecordedEvents(),
        node=NODE,
        pods_dir=pods_dir,
        connect=lambda _socket: launcher,
        proxies=proxies,
        pod_root=lambda _socket: PodRoot(open_root),
    )
    try:
        with contextlib.suppress(RequeueAfter):
            source.reconcile(vmi)
        assert [call for call, _ in launcher.calls] == ["MigrateVirtualMachine"]
        directory = open_root / PROXY_DIR.lstrip("/")
        uid = vmi["metadata"]["uid"]
        for name in (f"{uid}-source.sock", f"{uid}-49152-source.sock"):
            assert owner(directory / name) == (user, user)
            if user:
                assert connect_as(user, directory, name) == "connected"
    finally:
        proxies.shut_down()
