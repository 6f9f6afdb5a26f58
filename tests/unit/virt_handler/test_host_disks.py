"""virt-handler makes a launcher pod's missing DiskOrCreate images (host disks and filesystem claims'
disk.img) through the pod's root before the first sync, with the KubeVirt CR's toleration and reserve:
KubeVirt's ToleratedSmallPV event, its "preparing host-disks failed" sync failure, links refused."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller import RequeueAfter, Store
from kubevirt.podroot import PodRoot
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_handler.host_disks import HostDiskPreparationError, HostDisks
from kubevirt.virt_handler.pod_sockets import PodSocketError
from kubevirt.virt_handler.vm_controller import VMController
from kubevirt_testing.events import RecordedEvents
from kubevirt_testing.fake_kube_api import FakeKubeApi

from .test_vm_controller import NODE, FakeLauncher, _vmi, pods_dir

__all__ = ["pods_dir"]  # the fixture, used by name

JSON = dict[str, Any]
MIB = 1 << 20
DISKS = "run/kubevirt-private/vmi-disks"  # /var/run links to /run in the pod, as in Debian-based images
SOCKET = Path("/launcher-sock")
CLAIM_IMAGE = "/var/run/kubevirt-private/vmi-disks/data/disk.img"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    pod = tmp_path / "pod"
    for volume in ("data", "host"):
        (pod / DISKS / volume).mkdir(parents=True)
    (pod / "var").mkdir()
    os.symlink("/run", pod / "var/run")
    return pod


@pytest.fixture
def room(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Sets the free space every volume directory reports."""

    def set_room(free: int) -> None:
        monkeypatch.setattr(os, "fstatvfs", lambda _fd: SimpleNamespace(f_bavail=free // 4096, f_frsize=4096))

    return set_room


def vmi_with_disks(claim_size: str = "100Mi", host_capacity: str = "8Mi") -> JSON:
    vmi = _vmi()
    vmi["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {
            "name": "host",
            "hostDisk": {"path": "/srv/h.img", "type": "DiskOrCreate", "capacity": host_capacity},
        },
    ]
    vmi["status"]["volumeStatus"] = [
        {
            "name": "data",
            "persistentVolumeClaimInfo": {"volumeMode": "Filesystem", "capacity": {"storage": claim_size}},
        }
    ]
    return vmi


def config(**developer: int) -> Callable[[], ClusterConfig]:
    cluster = ClusterConfig.from_kubevirt({"spec": {"configuration": {"developerConfiguration": developer}}})
    return lambda: cluster


def host_disks(
    root: Path, events: RecordedEvents, cluster: Callable[[], ClusterConfig] = ClusterConfig
) -> HostDisks:
    return HostDisks(
        events=events, config=cluster, pod_root=lambda _socket: PodRoot(root), owner=os.geteuid()
    )


def test_missing_images_are_made_sparse_from_the_claim_and_the_host_disk(root: Path) -> None:
    events = RecordedEvents()
    made = host_disks(root, events).prepare(vmi_with_disks(), SOCKET)
    assert made == [CLAIM_IMAGE, "/srv/h.img"]
    for relative, size in (("data/disk.img", 100 * MIB), ("host/h.img", 8 * MIB)):
        image = root / DISKS / relative
        assert (image.stat().st_size, image.stat().st_blocks) == (size, 0)
    assert events.seen == []


def test_an_image_already_there_is_left_as_it_is(root: Path) -> None:
    image = root / DISKS / "data/disk.img"
    image.write_bytes(b"guest data")
    os.chmod(image, 0o600)
    before = image.stat()
    assert host_disks(root, RecordedEvents()).prepare(vmi_with_disks(), SOCKET) == ["/srv/h.img"]
    after = image.stat()
    assert image.read_bytes() == b"guest data"
    assert (after.st_mode, after.st_uid, after.st_mtime_ns) == (
        before.st_mode,
        before.st_uid,
        before.st_mtime_ns,
    )


def test_the_toleration_comes_from_the_kubevirt_cr_and_is_told_on_the_vmi(
    root: Path, room: Callable[[int], None]
) -> None:
    room(85 * MIB + 131072)  # 85 MiB beyond KubeVirt's default reserve: 15 % short of the claim's 100 MiB
    events = RecordedEvents()
    with pytest.raises(HostDiskPreparationError, match="after taking 10 % toleration into account"):
        host_disks(root, events).prepare(vmi_with_disks(), SOCKET)
    assert list((root / DISKS / "data").iterdir()) == []

    host_disks(root, events, config(pvcTolerateLessSpaceUpToPercent=20)).prepare(vmi_with_disks(), SOCKET)
    assert (root / DISKS / "data/disk.img").stat().st_size == 85 * MIB
    assert events.seen == [
        (
            "Normal",
            "ToleratedSmallPV",
            f"PV size too small: expected {100 * MIB} B, found {85 * MIB} B. "
            "Using it anyway, it is within 20 % toleration",
        )
    ]


def test_the_reserve_comes_from_the_kubevirt_cr(root: Path, room: Callable[[int], None]) -> None:
    room(120 * MIB)
    reserve = config(minimumReservePVCBytes=40 * MIB)
    with pytest.raises(HostDiskPreparationError) as failed:
        host_disks(root, RecordedEvents(), reserve).prepare(vmi_with_disks(), SOCKET)
    assert str(failed.value) == (
        f"preparing host-disks failed: unable to create {CLAIM_IMAGE}, not enough space, demanded size "
        f"{100 * MIB} B is bigger than available space {80 * MIB} B, also after taking 10 % toleration "
        "into account"
    )
    # KubeVirt's default reserve (128 KiB) leaves room for it.
    assert host_disks(root, RecordedEvents()).prepare(vmi_with_disks(), SOCKET) == [CLAIM_IMAGE, "/srv/h.img"]


def _link_volume_dir(root: Path, outside: Path) -> None:
    (root / DISKS / "data").rmdir()
    os.symlink(outside.parent, root / DISKS / "data")


def _link_image(root: Path, outside: Path) -> None:
    os.symlink(outside, root / DISKS / "data/disk.img")


def _link_vmi_disks_out_of_the_pod(root: Path, outside: Path) -> None:
    os.rename(root / DISKS, root / "elsewhere")
    os.symlink(outside.parent, root / DISKS)  # resolved inside the pod's root: no such directory there


@pytest.mark.parametrize("plant", [_link_volume_dir, _link_image, _link_vmi_disks_out_of_the_pod])
def test_links_are_refused_and_what_they_point_at_is_untouched(
    tmp_path: Path, root: Path, plant: Callable[[Path, Path], None]
) -> None:
    outside = tmp_path / "host" / "disk.img"
    outside.parent.mkdir()
    outside.write_bytes(b"host file")
    plant(root, outside)
    with pytest.raises(HostDiskPreparationError, match=r"^preparing host-disks failed: spec.volumes\[0\]"):
        host_disks(root, RecordedEvents()).prepare(vmi_with_disks(), SOCKET)
    assert sorted(p.name for p in outside.parent.iterdir()) == ["disk.img"]
    assert outside.read_bytes() == b"host file"


def test_a_claim_that_cannot_be_sized_fails_in_kubevirts_words(root: Path) -> None:
    vmi = vmi_with_disks()
    vmi["status"]["volumeStatus"][0]["persistentVolumeClaimInfo"] = {"volumeMode": "Filesystem"}
    with pytest.raises(HostDiskPreparationError, match="unable to determine capacity of HostDisk from PVC"):
        host_disks(root, RecordedEvents()).prepare(vmi, SOCKET)


def test_a_vmi_with_nothing_to_make_does_not_look_up_its_pod() -> None:
    def no_pod(_socket: Path) -> PodRoot:
        raise AssertionError("the pod is not looked up")

    vmi = vmi_with_disks()
    vmi["spec"]["volumes"][1]["hostDisk"]["type"] = "Disk"
    vmi["status"]["volumeStatus"][0]["persistentVolumeClaimInfo"]["volumeMode"] = "Block"
    assert HostDisks(events=RecordedEvents(), pod_root=no_pod).prepare(vmi, SOCKET) == []


def test_a_launcher_pod_that_cannot_be_verified_fails(root: Path) -> None:
    def refused(_socket: Path) -> PodRoot:
        raise PodSocketError("the process behind the socket is not in the pod")

    with pytest.raises(HostDiskPreparationError, match=r"^the launcher's pod: the process behind"):
        HostDisks(events=RecordedEvents(), pod_root=refused).prepare(vmi_with_disks(), SOCKET)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_images_made_are_kubevirts_qemu_users_for_root_and_non_root_launchers(root: Path) -> None:
    vmi = vmi_with_disks()  # no runtimeUser: a root launcher, whose images are the qemu user's all the same
    HostDisks(events=RecordedEvents(), pod_root=lambda _socket: PodRoot(root)).prepare(vmi, SOCKET)
    for relative in ("data/disk.img", "host/h.img"):
        info = (root / DISKS / relative).stat()
        assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (107, 107, 0o660)
    assert (root / DISKS / "data").stat().st_uid == 0  # the directory stays as it was mounted


# -- where the VM controller does it ------------------------------------------------------------------


class ImageCheckingLauncher(FakeLauncher):
    """Notes, at each sync, whether the claim's image was there."""

    def __init__(self, image: Path) -> None:
        super().__init__()
        self.image = image
        self.image_there: list[bool] = []

    def sync_vmi(self, vmi: JSON, options: Any = None) -> None:
        self.image_there.append(self.image.exists())
        super().sync_vmi(vmi, options)


@pytest.fixture
def controller_of(pods_dir: Path, root: Path) -> Callable[[JSON], tuple[VMController, Any, Any]]:
    def make(vmi: JSON) -> tuple[VMController, Any, Any]:
        api, store, events = FakeKubeApi(), Store[JSON](), RecordedEvents()
        launcher = ImageCheckingLauncher(root / DISKS / "data/disk.img")
        store.upsert(api.add(VIRTUAL_MACHINE_INSTANCES, vmi))
        controller = VMController(
            api=api,
            events=events,
            vmi_store=store,
            node=NODE,
            pods_dir=pods_dir,
            connect=lambda _socket: launcher,
            host_disks=host_disks(root, events),
        )
        return controller, launcher, (api, events)

    return make


def _reconcile(controller: VMController) -> None:
    with contextlib.suppress(RequeueAfter):
        controller.reconcile("default/tiny")


def test_the_images_are_there_before_the_first_sync(
    controller_of: Callable[[JSON], tuple[VMController, Any, Any]],
) -> None:
    controller, launcher, _ = controller_of(vmi_with_disks())
    _reconcile(controller)
    assert launcher.image_there == [True]


def test_not_enough_space_is_a_sync_failure_not_a_sync(
    controller_of: Callable[[JSON], tuple[VMController, Any, Any]], room: Callable[[int], None]
) -> None:
    room(10 * MIB)
    controller, launcher, (api, events) = controller_of(vmi_with_disks())
    _reconcile(controller)
    assert launcher.calls == []
    [(event_type, reason, message)] = events.seen
    assert (event_type, reason) == ("Warning", "SyncFailed")
    assert message.startswith(
        f"preparing host-disks failed: unable to create {CLAIM_IMAGE}, not enough space"
    )
    vmi = api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
    [synchronized] = [c for c in vmi["status"]["conditions"] if c["type"] == "Synchronized"]
    assert (synchronized["status"], synchronized["message"]) == ("False", message)
    assert vmi["status"]["phase"] == "Scheduled"
