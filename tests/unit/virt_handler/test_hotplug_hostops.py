"""The node's hotplug helper on what a pod may plant, where no mount or device is needed to see it refused.

The same helper with real bind mounts, loop devices and a devices cgroup is in
``tests/integration/handler/test_hotplug_mount.py``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kubevirt.virt_handler.hotplug_disk import hostops
from kubevirt.virt_handler.hotplug_disk.mounter import run_hostops

JSON = dict[str, Any]
LAUNCHER = "l-pod"
ATTACH = "a-pod"
CGROUP = f"/kubepods/pod{LAUNCHER}/c0ffee"


def _disks(pods: Path, uid: str) -> Path:
    return pods / uid / "volumes" / "kubernetes.io~empty-dir" / "hotplug-disks"


@pytest.fixture
def pods(tmp_path: Path) -> Path:
    root = tmp_path / "pods"
    _disks(root, LAUNCHER).mkdir(parents=True)
    _disks(root, ATTACH).mkdir(parents=True)
    return root


def _run(pods: Path, op: JSON) -> JSON:
    fd = os.open(pods, os.O_PATH | os.O_DIRECTORY)
    try:
        return hostops.run(fd, op)
    finally:
        os.close(fd)


def _mount_file(volume: str = "vol", pid: int | None = None) -> JSON:
    pid = os.getpid() if pid is None else pid
    return {"op": "mountFile", "volume": volume, "launcher": LAUNCHER, "attach": ATTACH, "attachPid": pid}


def test_a_link_planted_at_the_mount_point_is_refused_and_not_followed(pods: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"host file")
    (_disks(pods, LAUNCHER) / "vol.img").symlink_to(victim)
    answer = _run(pods, _mount_file())
    assert answer == {
        "error": "hotplug-disks/vol.img in the launcher pod: refused, a symlink",
        "kind": "refused",
    }
    assert victim.read_bytes() == b"host file"


@pytest.mark.parametrize(("make", "kind"), [(os.mkdir, "a directory"), (os.mkfifo, "a FIFO")])
def test_a_mount_point_that_is_not_a_file_is_refused(pods: Path, make: Any, kind: str) -> None:
    make(_disks(pods, LAUNCHER) / "vol.img")
    answer = _run(pods, _mount_file())
    assert answer["kind"] == "refused"
    assert answer["error"].endswith(f"refused, {kind} and not a regular file")


def test_a_launcher_volume_that_is_a_link_is_refused(pods: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    disks = _disks(pods, LAUNCHER)
    disks.rmdir()
    disks.symlink_to(elsewhere)
    answer = _run(pods, _mount_file())
    assert answer == {
        "error": "the launcher pod's hotplug-disks volume: refused, a symlink where a directory was expected",
        "kind": "refused",
    }
    assert list(elsewhere.iterdir()) == []


def test_the_mount_point_is_made_0666_and_waits_for_the_claim(pods: Path) -> None:
    # This process stands in for the attachment pod: it has no /hp-absent-volume, so no claim is found.
    answer = _run(pods, _mount_file("hp-absent-volume"))
    assert answer == {
        "state": "waiting",
        "why": "the attachment pod has no volume mounted at /hp-absent-volume",
    }
    target = _disks(pods, LAUNCHER) / "hp-absent-volume.img"
    assert target.stat().st_size == 0
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_a_block_source_directory_is_waited_for_and_must_hold_a_block_device(pods: Path) -> None:
    op = {"op": "makeBlock", "volume": "blk", "launcher": LAUNCHER, "attach": ATTACH, "cgroup": CGROUP}
    assert _run(pods, op)["state"] == "waiting"  # the runtime has not made the container yet
    source = _disks(pods, ATTACH) / "blk"
    source.mkdir()
    assert _run(pods, op)["state"] == "waiting"
    os.mkfifo(source / "claim-uid")  # what the attachment pod's user can make there, unlike a device
    (source / "link").symlink_to("/dev/sda")
    assert _run(pods, op) == {
        "error": "the attachment pod's hotplug-disks/blk: refused, it holds no block device",
        "kind": "refused",
    }
    assert not (_disks(pods, LAUNCHER) / "blk").exists()


def test_a_block_source_that_is_a_link_is_refused(pods: Path, tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (_disks(pods, ATTACH) / "blk").symlink_to(tmp_path / "dev")
    op = {"op": "makeBlock", "volume": "blk", "launcher": LAUNCHER, "attach": ATTACH, "cgroup": CGROUP}
    assert _run(pods, op)["error"].endswith("refused, a symlink where a directory was expected")


def test_only_the_launcher_pods_cgroup_is_written(pods: Path) -> None:
    op = {
        "op": "makeBlock",
        "volume": "blk",
        "launcher": LAUNCHER,
        "attach": ATTACH,
        "cgroup": "/kubepods/podx/c",
    }
    assert _run(pods, op) == {
        "error": "the cgroup /kubepods/podx/c is not one of the launcher pod l-pod",
        "kind": "refused",
    }


@pytest.mark.parametrize("field", ["volume", "launcher", "attach"])
def test_names_that_would_leave_their_directory_are_refused(pods: Path, field: str) -> None:
    answer = _run(pods, {**_mount_file(), field: ".."})
    assert answer["kind"] == "failed"
    assert "is not a" in answer["error"]


def test_removing_what_is_not_there_changes_nothing(pods: Path) -> None:
    assert _run(pods, {"op": "unmountFile", "volume": "vol", "launcher": LAUNCHER}) == {"changed": False}
    assert _run(pods, {"op": "unmountFile", "volume": "vol", "launcher": "gone-pod"}) == {"changed": False}
    remove = {"op": "removeBlock", "volume": "blk", "launcher": "gone-pod", "device": "7:3", "cgroup": ""}
    assert _run(pods, {**remove, "deny": True}) == {"changed": False}


def test_an_unmounted_target_is_removed_and_a_directory_left(pods: Path) -> None:
    disks = _disks(pods, LAUNCHER)
    (disks / "vol.img").write_bytes(b"")
    (disks / "blk").mkdir()
    assert _run(pods, {"op": "unmountFile", "volume": "vol", "launcher": LAUNCHER}) == {"changed": True}
    assert not (disks / "vol.img").exists()
    remove = {
        "op": "removeBlock",
        "volume": "blk",
        "launcher": LAUNCHER,
        "device": "",
        "cgroup": "",
        "deny": True,
    }
    assert _run(pods, remove) == {"changed": False}
    assert (disks / "blk").is_dir()


def test_the_helper_process_answers_each_operation(pods: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"host file")
    (_disks(pods, LAUNCHER) / "evil.img").symlink_to(victim)
    operations = [
        _mount_file("evil"),
        _mount_file("hp-absent-volume"),
        {"op": "unmountFile", "volume": "vol", "launcher": LAUNCHER},
        {"op": "nonsense"},
    ]
    answers = run_hostops({"podsDir": str(pods), "operations": operations}, "")
    assert [answer.get("kind") or answer.get("state") or answer.get("changed") for answer in answers] == [
        "refused",
        "waiting",
        False,
        "failed",
    ]
    assert victim.read_bytes() == b"host file"
    # KubeVirt touches the mount point 0666; the helper runs with no umask to make it so.
    assert (_disks(pods, LAUNCHER) / "hp-absent-volume.img").stat().st_mode & 0o777 == 0o666


def test_the_helper_refuses_a_request_it_cannot_read() -> None:
    assert hostops.main(["--namespace", "", "{"]) == 1
    assert hostops.main([]) == 2
