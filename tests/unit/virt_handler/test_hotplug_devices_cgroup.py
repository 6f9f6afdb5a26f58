"""The launcher container's devices cgroup: finding it, and the rules for a hotplugged block device."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubevirt import safepath
from kubevirt.virt_handler.hotplug_disk import devices_cgroup
from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError

POD = "0d9e3c6a-1b2c-4d5e-8f90-123456789abc"
CGROUP_V1 = f"""12:pids:/kubepods/besteffort/pod{POD}/c0ffee
5:devices:/kubepods/besteffort/pod{POD}/c0ffee
4:cpu,cpuacct:/kubepods/besteffort/pod{POD}/c0ffee
0::/
"""


def test_the_devices_line_of_proc_cgroup_names_the_container() -> None:
    assert devices_cgroup.devices_path(CGROUP_V1) == f"/kubepods/besteffort/pod{POD}/c0ffee"


def test_cgroup_v2_alone_is_refused_with_a_reason() -> None:
    with pytest.raises(HotplugVolumeError, match="no cgroup v1 devices hierarchy"):
        devices_cgroup.devices_path("0::/kubepods.slice/x\n")


def test_the_launchers_cgroup_is_read_from_its_process(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "cgroup").write_text(CGROUP_V1)
    assert devices_cgroup.launcher_devices_path(42, proc=tmp_path).endswith("/c0ffee")
    with pytest.raises(HotplugVolumeError, match="pid 43"):
        devices_cgroup.launcher_devices_path(43, proc=tmp_path)


@pytest.mark.parametrize(
    ("path", "names"),
    [
        (f"/kubepods/besteffort/pod{POD}/c0ffee", True),
        (f"/kubepods.slice/kubepods-pod{POD.replace('-', '_')}.slice/cri-containerd-c0.scope", True),
        (f"/kubepods/besteffort/pod{POD}x/c0ffee", False),
        ("/kubepods/besteffort/podother/c0ffee", False),
        (f"/system.slice/{POD}", False),
    ],
)
def test_a_cgroup_belongs_to_a_pod_only_when_a_component_names_it(path: str, names: bool) -> None:
    assert devices_cgroup.names_pod(path, POD) is names


MOUNTINFO = """22 1 8:1 / / rw - ext4 /dev/sda1 rw
30 22 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
31 22 0:27 / /sys/fs/cgroup/devices\\040here rw,nosuid shared:9 - cgroup cgroup rw,devices
"""


def test_the_devices_hierarchy_is_found_in_the_mount_table() -> None:
    assert devices_cgroup.hierarchy(MOUNTINFO) == ("/sys/fs/cgroup/devices here", "/")
    with pytest.raises(HotplugVolumeError, match="no cgroup v1 devices hierarchy is mounted"):
        devices_cgroup.hierarchy(MOUNTINFO.splitlines()[1])


def _fake_hierarchy(tmp_path: Path, root: str = "/") -> tuple[Path, Path]:
    top = tmp_path / "devices"
    cgroup = top / "kubepods" / f"pod{POD}" / "c0ffee"
    cgroup.mkdir(parents=True)
    for name in ("devices.allow", "devices.deny"):
        (cgroup / name).write_text("")
    (cgroup / "devices.list").write_text("c 1:3 rwm\nb 7:1 rwm\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"31 22 0:27 {root} {top} rw - cgroup cgroup rw,devices\n")
    return cgroup, mountinfo


def test_rules_go_to_the_cgroups_files(tmp_path: Path) -> None:
    cgroup, mountinfo = _fake_hierarchy(tmp_path)
    fd = devices_cgroup.open_cgroup(f"/kubepods/pod{POD}/c0ffee", mountinfo=mountinfo)
    try:
        assert devices_cgroup.allowed(fd, "7:1")
        assert not devices_cgroup.allowed(fd, "7:2")
        devices_cgroup.allow(fd, "7:2")
        devices_cgroup.deny(fd, "7:3")
    finally:
        os.close(fd)
    assert (cgroup / "devices.allow").read_text() == "b 7:2 rwm"
    assert (cgroup / "devices.deny").read_text() == "b 7:3 rwm"


def test_a_cgroup_allowing_all_devices_allows_the_block_device(tmp_path: Path) -> None:
    cgroup, mountinfo = _fake_hierarchy(tmp_path)
    (cgroup / "devices.list").write_text("a *:* rwm\n")
    fd = devices_cgroup.open_cgroup(f"/kubepods/pod{POD}/c0ffee", mountinfo=mountinfo)
    try:
        assert devices_cgroup.allowed(fd, "8:0")
    finally:
        os.close(fd)


def test_a_hierarchy_mounted_from_a_subtree_is_joined_below_its_root(tmp_path: Path) -> None:
    _, mountinfo = _fake_hierarchy(tmp_path, root="/kubepods")
    os.close(devices_cgroup.open_cgroup(f"/kubepods/kubepods/pod{POD}/c0ffee", mountinfo=mountinfo))
    with pytest.raises(HotplugVolumeError, match="outside the devices hierarchy"):
        devices_cgroup.open_cgroup(f"/elsewhere/pod{POD}", mountinfo=mountinfo)


def test_no_link_is_followed_to_a_cgroup(tmp_path: Path) -> None:
    cgroup, mountinfo = _fake_hierarchy(tmp_path)
    (cgroup.parent / "linked").symlink_to(cgroup)
    with pytest.raises(safepath.UnsafePathError):
        devices_cgroup.open_cgroup(f"/kubepods/pod{POD}/linked", mountinfo=mountinfo)
    with pytest.raises(HotplugVolumeError, match="not a cgroup path"):
        devices_cgroup.open_cgroup(f"/kubepods/pod{POD}/../pod{POD}/c0ffee", mountinfo=mountinfo)


@pytest.mark.parametrize("device", ["7", "7:1 rwm", "a:b", "7:1\nb 8:0"])
def test_only_a_major_minor_pair_makes_a_rule(device: str) -> None:
    with pytest.raises(HotplugVolumeError, match="not a MAJOR:MINOR"):
        devices_cgroup.rule(device)
    assert devices_cgroup.rule("259:3") == "b 259:3 rwm"
