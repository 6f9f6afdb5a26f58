"""The hotplug mounter's decisions: what it asks the node's helper to do, what it records and reports.

The helper process itself (:mod:`kubevirt.virt_handler.hotplug_disk.hostops`) is replaced by a fake
here; ``tests/integration/handler/test_hotplug_mount.py`` runs it with real mounts and devices.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError
from kubevirt.virt_handler.hotplug_disk.mounter import (
    HotplugMounter,
    LauncherPod,
    domain_disk_names,
    hotplug_volumes,
    root_of,
    target_attachment_pod,
    volumes_to_keep,
)
from kubevirt.virt_handler.pod_sockets import PodSocketError
from kubevirt_testing.kubelet_pods import service_account_volume

JSON = dict[str, Any]
LAUNCHER = "l-pod"
ATTACH = "a-pod"
TARGET_ATTACH = "t-pod"  # the attachment pod next to a migration target's launcher pod
VMI_UID = "vmi-1"
LAUNCHER_PID = 77
ATTACH_PID = 4242
CGROUP = f"/kubepods/besteffort/pod{LAUNCHER}/c0ffee"


def _vmi(*volumes: tuple[str, str, str], removed: tuple[str, ...] = ()) -> JSON:
    """A VMI with hotplugged claims ``(name, volumeMode, attachPodUID)``; ``removed`` ones are only left in
    the status (virt-controller keeps them while the attachment pod lives)."""
    spec = [{"name": "root", "containerDisk": {"image": "i"}}]
    status: list[JSON] = [{"name": "root", "target": "vda"}]
    for name, mode, attach in volumes:
        if name not in removed:
            spec.append({"name": name, "persistentVolumeClaim": {"claimName": name, "hotpluggable": True}})
        status.append(
            {
                "name": name,
                "phase": "AttachedToNode",
                "hotplugVolume": {"attachPodName": "hp-volume-x", "attachPodUID": attach},
                "persistentVolumeClaimInfo": {"claimName": name, "volumeMode": mode},
            }
        )
    return {
        "metadata": {"name": "vm", "namespace": "ns", "uid": VMI_UID},
        "spec": {"volumes": spec},
        "status": {"volumeStatus": status},
    }


class FakeHostOps:
    """Answers each operation from ``answer`` (by op and volume); records the requests and the mount
    record as it was on disk when each request came."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.requests: list[tuple[JSON, str | None]] = []
        self.records_seen: list[JSON | None] = []
        self.answers: dict[tuple[str, str], JSON] = {}

    def __call__(self, request: JSON, namespace: str | None) -> list[JSON]:
        self.requests.append((request, namespace))
        path = self.state_dir / VMI_UID
        self.records_seen.append(json.loads(path.read_text()) if path.exists() else None)
        return [self.answer(op) for op in request["operations"]]

    def answer(self, op: JSON) -> JSON:
        found = self.answers.get((op["op"], op["volume"]))
        if found is not None:
            return found
        if op["op"] == "makeBlock":
            return {"state": "mounted", "device": "7:3", "preexisting": False}
        if op["op"] == "mountFile":
            return {"state": "mounted"}
        return {"changed": True}

    @property
    def operations(self) -> list[JSON]:
        return [op for request, _ in self.requests for op in request["operations"]]


@pytest.fixture
def proc(tmp_path: Path) -> Path:
    root = tmp_path / "proc"
    (root / str(LAUNCHER_PID)).mkdir(parents=True)
    (root / str(LAUNCHER_PID) / "cgroup").write_text(f"5:devices:{CGROUP}\n0::/\n")
    return root


@pytest.fixture
def hostops(tmp_path: Path) -> FakeHostOps:
    return FakeHostOps(tmp_path / "state")


class Attachments:
    def __init__(self) -> None:
        self.asked: list[str] = []
        self.failure: Exception | None = None
        self.failures: dict[str, Exception] = {}  # by attachment pod

    def __call__(self, pods_dir: Path, uid: str) -> int:
        self.asked.append(uid)
        if self.failure is not None:
            raise self.failure
        if uid in self.failures:
            raise self.failures[uid]
        return ATTACH_PID


@pytest.fixture
def attachments() -> Attachments:
    return Attachments()


@pytest.fixture
def mounter(tmp_path: Path, hostops: FakeHostOps, attachments: Attachments, proc: Path) -> HotplugMounter:
    (tmp_path / "pods").mkdir()
    for pod in (ATTACH, "other", TARGET_ATTACH):
        service_account_volume(tmp_path / "pods", pod, "ns")  # the VMI's namespace
    return HotplugMounter(
        pods_dir=tmp_path / "pods",
        host_pods_dir=tmp_path / "pods",
        state_dir=tmp_path / "state",
        namespace="",
        hostops_runner=hostops,
        find_attachment=attachments,
        proc=proc,
    )


def _launcher() -> LauncherPod:
    return LauncherPod(uid=LAUNCHER, pid=lambda: LAUNCHER_PID)


def _record(tmp_path: Path) -> JSON:
    loaded: JSON = json.loads((tmp_path / "state" / VMI_UID).read_text())
    return loaded


def test_each_volume_in_the_spec_with_an_attachment_pod_is_asked_for(
    mounter: HotplugMounter, hostops: FakeHostOps, tmp_path: Path
) -> None:
    vmi = _vmi(("fs", "Filesystem", ATTACH), ("blk", "Block", ATTACH))
    assert mounter.mount(vmi, _launcher()) == []
    request, namespace = hostops.requests[0]
    assert (request["podsDir"], namespace) == (str(tmp_path / "pods"), "")
    assert request["operations"] == [
        {"op": "mountFile", "attachPid": ATTACH_PID, "volume": "fs", "launcher": LAUNCHER, "attach": ATTACH},
        {"op": "makeBlock", "cgroup": CGROUP, "volume": "blk", "launcher": LAUNCHER, "attach": ATTACH},
    ]
    # Recorded before anything was made: a handler that dies meanwhile still removes it.
    before = hostops.records_seen[0]
    assert before is not None
    assert [(e["targetFile"], e["kind"], e["device"]) for e in before["mountTargetEntries"]] == [
        ("fs.img", "file", ""),
        ("blk", "block", ""),
    ]
    after = _record(tmp_path)
    assert (after["namespace"], after["name"], after["podUID"]) == ("ns", "vm", LAUNCHER)
    blk = next(e for e in after["mountTargetEntries"] if e["volume"] == "blk")
    assert (blk["device"], blk["cgroup"], blk["preexisting"]) == ("7:3", CGROUP, False)
    assert mounter.recorded("ns", "vm") == [VMI_UID]
    assert mounter.recorded("ns", "other") == []


def test_volumes_without_an_attachment_pod_or_out_of_the_spec_are_not_asked_for(
    mounter: HotplugMounter, hostops: FakeHostOps
) -> None:
    vmi = _vmi(("waiting", "Filesystem", ""), ("gone", "Filesystem", ATTACH), removed=("gone",))
    assert hotplug_volumes(vmi) == []
    assert mounter.mount(vmi, _launcher()) == []
    assert hostops.requests == []


def test_a_claim_without_its_image_is_a_warning_and_a_refusal_an_error(
    mounter: HotplugMounter, hostops: FakeHostOps
) -> None:
    hostops.answers[("mountFile", "empty")] = {
        "error": "disk.img of volume empty: no such file",
        "kind": "missing",
    }
    hostops.answers[("mountFile", "evil")] = {"error": "disk.img: refused, a symlink", "kind": "refused"}
    hostops.answers[("mountFile", "later")] = {"state": "waiting", "why": "not yet"}
    vmi = _vmi(("empty", "Filesystem", ATTACH), ("evil", "Filesystem", ATTACH), ("later", "", ATTACH))
    with pytest.raises(HotplugVolumeError) as raised:
        mounter.mount(vmi, _launcher())
    assert str(raised.value) == "failed to mount filesystem hotplug volume evil: disk.img: refused, a symlink"
    hostops.answers.pop(("mountFile", "evil"))
    warnings = mounter.mount(_vmi(("empty", "Filesystem", ATTACH), ("later", "", ATTACH)), _launcher())
    assert warnings == [
        "failed to mount filesystem hotplug volume empty: disk.img of volume empty: no such file"
    ]


def test_an_attachment_pod_not_listening_yet_is_waited_for(
    mounter: HotplugMounter, hostops: FakeHostOps, attachments: Attachments
) -> None:
    attachments.failure = FileNotFoundError(2, "No such file or directory")
    assert mounter.mount(_vmi(("fs", "Filesystem", ATTACH)), _launcher()) == []
    assert hostops.requests == []


def test_an_attachment_pods_socket_that_is_refused_fails_its_volumes_only(
    mounter: HotplugMounter, hostops: FakeHostOps, attachments: Attachments
) -> None:
    """A Block claim is taken from a running attachment pod only, checked as a Filesystem one is."""
    attachments.failures[ATTACH] = PodSocketError("hp.sock: refused, a symlink")
    vmi = _vmi(("fs", "Filesystem", ATTACH), ("blk", "Block", ATTACH), ("fine", "Block", "other"))
    with pytest.raises(
        HotplugVolumeError, match=r"volume fs: the attachment pod: hp\.sock: refused, a symlink"
    ):
        mounter.mount(vmi, _launcher())
    assert [op["volume"] for op in hostops.operations] == ["fine"]


def test_a_block_claim_waits_for_its_attachment_pod_to_run(
    mounter: HotplugMounter, hostops: FakeHostOps, attachments: Attachments
) -> None:
    attachments.failure = FileNotFoundError(2, "No such file or directory")
    assert mounter.mount(_vmi(("blk", "Block", ATTACH)), _launcher()) == []
    assert hostops.requests == []


def test_the_attachment_pods_process_is_found_once_per_sync(
    mounter: HotplugMounter, attachments: Attachments
) -> None:
    mounter.mount(
        _vmi(("a", "Filesystem", ATTACH), ("b", "Filesystem", ATTACH), ("c", "", "other")), _launcher()
    )
    assert attachments.asked == [ATTACH, "other"]


def test_a_launcher_not_of_its_pod_fails_the_block_volumes(
    mounter: HotplugMounter, hostops: FakeHostOps
) -> None:
    def refused() -> int:
        raise PodSocketError("the process behind the socket (pid 9) is not in pod l-pod")

    with pytest.raises(HotplugVolumeError, match=r"the launcher's process: .* is not in pod l-pod"):
        mounter.mount(_vmi(("blk", "Block", ATTACH)), LauncherPod(uid=LAUNCHER, pid=refused))
    assert hostops.requests == []


def test_volumes_that_left_the_spec_and_the_domain_are_removed(
    mounter: HotplugMounter, hostops: FakeHostOps, tmp_path: Path
) -> None:
    vmi = _vmi(("fs", "Filesystem", ATTACH), ("blk", "Block", ATTACH), ("keep", "Filesystem", ATTACH))
    mounter.mount(vmi, _launcher())
    hostops.requests.clear()
    unplugged = _vmi(
        ("fs", "Filesystem", ATTACH),
        ("blk", "Block", ATTACH),
        ("keep", "Filesystem", ATTACH),
        removed=("fs", "blk"),
    )
    domain = {"Spec": {"Devices": {"Disks": [{"Alias": {"Name": "ua-blk"}}, {"Alias": {"Name": "ua-root"}}]}}}
    assert domain_disk_names(domain) == {"blk", "root"}
    keep = volumes_to_keep(unplugged, domain)
    assert keep == {"root", "keep", "blk"}  # blk is still the domain's: it goes with the next sync
    mounter.unmount(unplugged, keep)
    assert hostops.operations == [{"volume": "fs", "launcher": LAUNCHER, "op": "unmountFile"}]
    mounter.unmount(unplugged, volumes_to_keep(unplugged, None))
    assert hostops.operations[-1] == {
        "volume": "blk",
        "launcher": LAUNCHER,
        "op": "removeBlock",
        "device": "7:3",
        "cgroup": CGROUP,
        "deny": True,
    }
    assert [e["volume"] for e in _record(tmp_path)["mountTargetEntries"]] == ["keep"]


def test_a_failed_removal_stays_recorded_and_is_reported(
    mounter: HotplugMounter, hostops: FakeHostOps, tmp_path: Path
) -> None:
    mounter.mount(_vmi(("fs", "Filesystem", ATTACH), ("blk", "Block", ATTACH)), _launcher())
    hostops.answers[("unmountFile", "fs")] = {
        "error": "unmounting hotplug-disks/fs.img: Device busy",
        "kind": "failed",
    }
    with pytest.raises(HotplugVolumeError, match="failed to unmount hotplug volume fs: unmounting"):
        mounter.unmount_all(VMI_UID)
    assert [e["volume"] for e in _record(tmp_path)["mountTargetEntries"]] == ["fs"]
    hostops.answers.clear()
    mounter.unmount_all(VMI_UID)
    assert not (tmp_path / "state" / VMI_UID).exists()
    mounter.unmount_all(VMI_UID)  # nothing recorded any more: nothing asked
    assert hostops.operations[-1]["op"] == "unmountFile"


def test_a_rule_the_cgroup_had_before_is_left_there(mounter: HotplugMounter, hostops: FakeHostOps) -> None:
    hostops.answers[("makeBlock", "blk")] = {"state": "mounted", "device": "8:0", "preexisting": True}
    mounter.mount(_vmi(("blk", "Block", ATTACH)), _launcher())
    mounter.unmount_all(VMI_UID)
    assert hostops.operations[-1]["deny"] is False


def test_a_rule_we_added_is_still_ours_when_the_node_is_made_again(
    mounter: HotplugMounter, hostops: FakeHostOps, tmp_path: Path
) -> None:
    vmi = _vmi(("blk", "Block", ATTACH))
    mounter.mount(vmi, _launcher())  # allowed 7:3 here
    hostops.answers[("makeBlock", "blk")] = {"state": "mounted", "device": "7:3", "preexisting": True}
    mounter.mount(vmi, _launcher())  # the launcher removed its node: made again, the rule found in place
    assert _record(tmp_path)["mountTargetEntries"][0]["preexisting"] is False


def test_a_record_of_another_launcher_pod_is_removed_first(
    mounter: HotplugMounter, hostops: FakeHostOps, tmp_path: Path
) -> None:
    vmi = _vmi(("fs", "Filesystem", ATTACH))
    mounter.mount(vmi, LauncherPod(uid="old-pod", pid=lambda: LAUNCHER_PID))
    mounter.mount(vmi, _launcher())
    assert [(op["op"], op["launcher"]) for op in hostops.operations] == [
        ("mountFile", "old-pod"),
        ("unmountFile", "old-pod"),
        ("mountFile", LAUNCHER),
    ]
    assert _record(tmp_path)["podUID"] == LAUNCHER


def test_a_target_not_in_place_is_not_mounted(mounter: HotplugMounter, tmp_path: Path) -> None:
    vmi = _vmi(("fs", "Filesystem", ATTACH))
    assert mounter.mounted(vmi) == frozenset()
    mounter.mount(vmi, _launcher())
    disks = tmp_path / "pods" / LAUNCHER / "volumes" / "kubernetes.io~empty-dir" / "hotplug-disks"
    disks.mkdir(parents=True)
    (disks / "fs.img").write_bytes(b"")  # the empty mount point, nothing mounted on it
    assert mounter.mounted(vmi) == frozenset()


@pytest.mark.parametrize(
    ("status", "message"),
    [
        ({"name": "../x", "hotplugVolume": {"attachPodUID": "a"}}, r"status.volumeStatus\[0\].name"),
        (
            {"name": "x", "hotplugVolume": {"attachPodUID": "../a"}},
            r"volumeStatus\[0\].hotplugVolume.attachPodUID",
        ),
    ],
)
def test_names_that_are_not_plain_are_refused_with_their_field(status: JSON, message: str) -> None:
    vmi = {"spec": {"volumes": [{"name": status["name"]}]}, "status": {"volumeStatus": [status]}}
    with pytest.raises(HotplugVolumeError, match=message):
        hotplug_volumes(vmi)


def test_the_hosts_root_is_that_of_the_namespaces_process() -> None:
    assert root_of("/proc/1/ns/mnt") == Path("/proc/1/root")
    assert root_of("/proc/4711/ns/mnt") == Path("/proc/4711/root")
    assert root_of("/proc/self/ns/mnt") == Path("/")


def test_an_attachment_pod_of_another_namespace_is_refused(
    mounter: HotplugMounter, hostops: FakeHostOps, tmp_path: Path
) -> None:
    """The VMI's status may name any pod on the node: one of another namespace never lends its claims."""
    service_account_volume(tmp_path / "pods", "foreign", "victim")
    vmi = _vmi(("fs", "Filesystem", "foreign"), ("blk", "Block", "foreign"), ("mine", "Block", ATTACH))
    with pytest.raises(HotplugVolumeError) as raised:
        mounter.mount(vmi, _launcher())
    assert str(raised.value) == (
        "failed to mount filesystem hotplug volume fs: refused, the attachment pod foreign is in "
        "namespace victim, not in the VMI's namespace ns"
    )
    assert [op["volume"] for op in hostops.operations] == ["mine"]
    assert [e["volume"] for e in _record(tmp_path)["mountTargetEntries"]] == ["mine"]


def test_an_attachment_pod_whose_namespace_cannot_be_told_is_refused(
    mounter: HotplugMounter, hostops: FakeHostOps, tmp_path: Path
) -> None:
    (tmp_path / "pods" / "tokenless" / "volumes").mkdir(parents=True)
    with pytest.raises(HotplugVolumeError, match="cannot be verified: it has no service account token"):
        mounter.mount(_vmi(("blk", "Block", "tokenless")), _launcher())
    assert hostops.requests == []


class InPlace:
    """The node's answer to "is this target in the launcher pod": what the fake helper mounted."""

    def __init__(self) -> None:
        self.targets: set[tuple[str, str]] = set()

    def __call__(self, pods: int, launcher: str, volume: str, *, block: bool, device: str = "") -> bool:
        return (launcher, volume) in self.targets


def test_a_migration_target_mounts_every_hotplugged_volume_from_its_attachment_pod(
    mounter: HotplugMounter,
    hostops: FakeHostOps,
    attachments: Attachments,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    in_place = InPlace()
    monkeypatch.setattr("kubevirt.virt_handler.hotplug_disk.hostops.in_place", in_place)
    # The statuses name the source's attachment pod (or none yet); the target's pod holds them all.
    vmi = _vmi(
        ("fs", "Filesystem", ATTACH),
        ("blk", "Block", ATTACH),
        ("new", "Filesystem", ""),
        ("gone", "Filesystem", ATTACH),
        removed=("gone",),
    )
    vmi["status"]["migrationState"] = {"targetAttachmentPodUID": TARGET_ATTACH}
    assert target_attachment_pod(vmi) == TARGET_ATTACH
    assert mounter.mount(vmi, _launcher(), from_pod=TARGET_ATTACH) == []
    assert attachments.asked == [TARGET_ATTACH]
    assert [(op["op"], op["volume"], op["attach"]) for op in hostops.operations] == [
        ("mountFile", "fs", TARGET_ATTACH),
        ("makeBlock", "blk", TARGET_ATTACH),
        ("mountFile", "new", TARGET_ATTACH),
    ]
    in_place.targets = {(LAUNCHER, "fs"), (LAUNCHER, "blk"), (LAUNCHER, "new")}
    # After the take-over the node's VM controller syncs the VMI into the same pod: all is in place.
    hostops.requests.clear()
    del vmi["status"]["migrationState"]
    assert mounter.mount(vmi, _launcher()) == []
    assert hostops.requests == []
    assert mounter.mounted(vmi) == {"fs", "blk", "new"}
    assert _record(tmp_path)["podUID"] == LAUNCHER


def test_no_target_attachment_pod_is_none_and_a_malformed_one_is_refused() -> None:
    assert target_attachment_pod(_vmi()) == ""
    vmi = _vmi()
    vmi["status"]["migrationState"] = {"targetNode": "n"}
    assert target_attachment_pod(vmi) == ""
    vmi["status"]["migrationState"]["targetAttachmentPodUID"] = "../etc"
    with pytest.raises(HotplugVolumeError, match=r"status.migrationState.targetAttachmentPodUID"):
        target_attachment_pod(vmi)
