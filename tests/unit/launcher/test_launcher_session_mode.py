"""The non-root launcher's pieces: libvirt's session layout and configuration, the URIs, the checks that
refuse a user and mode that cannot work, and the VMI's non-root fact."""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Any, cast

import pytest

from kubevirt.virt_launcher.ambient_caps import CAP_NET_BIND_SERVICE, ambient_raiser, holds
from kubevirt.virt_launcher.app import user_mode_mismatch
from kubevirt.virt_launcher.libvirt_session import SessionError, SessionLayout
from kubevirt.virt_launcher.libvirtd import Libvirtd, LibvirtdError
from kubevirt.virt_launcher.virtwrap.migration import Migrator
from kubevirt.virt_launcher.virtwrap.vmi import InvalidVMIError, vmi_facts


def session(tmp_path: Path, uid: int = 107) -> SessionLayout:
    return SessionLayout(home=tmp_path / "private", runtime_parent=tmp_path / "run", uid=uid, gid=uid)


def conf(path: Path) -> dict[str, str]:
    return dict(line.split(" = ", 1) for line in path.read_text().splitlines() if line)


def test_the_session_layout_follows_kubevirts_xdg_variables(tmp_path: Path) -> None:
    layout = session(tmp_path)
    env = layout.environment({"PATH": "/usr/bin", "XDG_RUNTIME_DIR": "/elsewhere"})
    assert env == {
        "PATH": "/usr/bin",
        "XDG_CONFIG_HOME": str(tmp_path / "private"),
        "XDG_CACHE_HOME": str(tmp_path / "private"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }
    assert layout.qemu_conf == tmp_path / "private/libvirt/qemu.conf"
    assert layout.run_dir == tmp_path / "run/libvirt"
    assert layout.capabilities_dir == tmp_path / "private/libvirt/qemu/cache/capabilities"
    assert SessionLayout(home=Path("/var/run/kubevirt-private")).run_dir == Path("/var/run/libvirt")


def test_a_session_daemon_gets_kubevirts_non_root_qemu_conf_in_its_config_dir(tmp_path: Path) -> None:
    runtime = tmp_path / "private" / "libvirt"
    daemon = Libvirtd(runtime, session=session(tmp_path), migration_ports=(50000, 50010))
    daemon.write_config()
    qemu = conf(tmp_path / "private/libvirt/qemu.conf")
    assert qemu["user"] == qemu["group"] == '"+107"'  # its own user, named by number
    assert qemu["stdio_handler"] == '"file"'
    assert qemu["dynamic_ownership"] == "1"
    assert qemu["namespaces"] == qemu["cgroup_controllers"] == "[ ]"
    assert (qemu["migration_port_min"], qemu["migration_port_max"]) == ("50000", "50010")
    libvirtd = conf(runtime / "etc" / "libvirtd.conf")
    assert libvirtd["unix_sock_dir"] == f'"{runtime / "sock"}"'
    assert "unix_sock_group" not in libvirtd  # a non-root daemon cannot hand its socket to a group
    assert not (runtime / "etc" / "qemu.conf").exists()
    assert not (runtime / "run").exists()  # no system directories to bind or link
    assert daemon.uri.startswith("qemu+unix:///session?socket=")
    assert daemon.run_dir == tmp_path / "run/libvirt"
    assert daemon.session_argv() == [
        "libvirtd",
        "--config",
        str(runtime / "etc/libvirtd.conf"),
        "--pid-file",
        str(runtime / "libvirtd.pid"),
    ]


def test_a_system_daemon_is_as_before(tmp_path: Path) -> None:
    daemon = Libvirtd(tmp_path / "rt")
    daemon.write_config()
    assert conf(tmp_path / "rt/etc/libvirtd.conf")["unix_sock_group"] == '"root"'
    assert conf(tmp_path / "rt/etc/qemu.conf")["user"] == '"root"'
    assert daemon.uri.startswith("qemu+unix:///system?socket=")
    assert daemon.run_dir == tmp_path / "rt/run"


def _uid_without_passwd_entry() -> int:
    taken = {entry.pw_uid for entry in pwd.getpwall()}
    return next(uid for uid in range(54321, 64000) if uid not in taken)


def test_session_mode_refuses_root_and_users_libvirtd_cannot_name(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="runs as root"):
        session(tmp_path, uid=0).check_user()
    nameless = _uid_without_passwd_entry()
    with pytest.raises(SessionError, match=f"uid {nameless} has no passwd entry"):
        session(tmp_path, uid=nameless).check_user()
    named = next(entry.pw_uid for entry in pwd.getpwall() if entry.pw_uid != 0)
    session(tmp_path, uid=named).check_user()


def test_a_session_daemon_that_cannot_run_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    daemon = Libvirtd(tmp_path / "rt", session=session(tmp_path, uid=_uid_without_passwd_entry()))
    with pytest.raises(LibvirtdError, match="no passwd entry"):
        daemon.start()
    assert not (tmp_path / "rt").exists()


@pytest.mark.parametrize(
    ("non_root", "euid", "expected"),
    [
        (False, 0, ""),
        (True, 107, ""),
        (True, 0, "--run-as-nonroot, but virt-launcher runs as root"),
        (False, 107, "runs as uid 107 without --run-as-nonroot"),
    ],
)
def test_the_flag_and_the_user_must_agree(non_root: bool, euid: int, expected: str) -> None:
    mismatch = user_mode_mismatch(non_root, euid)
    assert (expected in mismatch) if expected else mismatch == ""


def test_the_vmi_says_whether_its_pods_run_non_root() -> None:
    base: dict[str, Any] = {"metadata": {"name": "vm", "uid": "u"}}
    assert not vmi_facts(base).non_root
    assert not vmi_facts({**base, "status": {"runtimeUser": 0}}).non_root
    assert vmi_facts({**base, "status": {"runtimeUser": 107}}).non_root
    annotated = {"metadata": {"name": "vm", "annotations": {"kubevirt.io/nonroot": ""}}}
    assert vmi_facts(annotated).non_root
    for bad in (-1, "107", True, ""):
        with pytest.raises(InvalidVMIError, match=r"status\.runtimeUser: must be (an integer|at least 0)"):
            vmi_facts({**base, "status": {"runtimeUser": bad}})


def test_a_non_root_vmi_migrates_to_its_targets_session_libvirt(tmp_path: Path) -> None:
    migrator = Migrator(cast(Any, None), tmp_path)
    assert migrator.destination_uri("u").startswith("qemu+unix:///system?socket=")
    assert migrator.destination_uri("u", non_root=True).startswith("qemu+unix:///session?socket=")


def test_capabilities_are_read_from_the_permitted_set(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("CapInh:\t0000000000000000\nCapPrm:\t0000000000000400\nCapEff:\t0000000000000000\n")
    assert holds(CAP_NET_BIND_SERVICE, status)
    assert not holds(CAP_NET_BIND_SERVICE + 1, status)


@pytest.mark.skipif(os.geteuid() != 0, reason="root's children need no ambient capabilities")
def test_root_passes_nothing_on() -> None:
    assert ambient_raiser() is None
