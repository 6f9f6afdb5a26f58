"""KubeVirt's seccomp profile as virt-handler writes it, and the installer the KubevirtSeccompProfile gate
turns on."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import structlog.testing

from kubevirt.controller import SharedInformerFactory
from kubevirt.virt_config import KUBEVIRT_SECCOMP_PROFILE_GATE, ClusterConfig
from kubevirt.virt_config.follower import ConfigFollower
from kubevirt.virt_handler.seccomp import (
    LOCALHOST_PROFILE,
    ProfileInstaller,
    install_profile,
    profile_bytes,
    profile_path,
)
from kubevirt_testing.fake_kube_api import FakeKubeApi

# sha256 of what KubeVirt v1.6.6's virt-handler writes (json.Marshal of its profile, built for amd64).
KUBEVIRT_V1_6_6_PROFILE_SHA256 = "70ff6b3b29a66c2fc56a9938c14fbb8fa16c0a25b85ecaed49d61e4a9f458fb6"


def _profile() -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(profile_bytes())
    return parsed


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_profile_is_byte_for_byte_kubevirts() -> None:
    assert hashlib.sha256(profile_bytes()).hexdigest() == KUBEVIRT_V1_6_6_PROFILE_SHA256


def test_the_profile_has_the_fields_of_containers_commons_format() -> None:
    profile = _profile()
    assert list(profile) == ["defaultAction", "defaultErrnoRet", "defaultErrno", "archMap", "syscalls"]
    assert (profile["defaultAction"], profile["defaultErrnoRet"], profile["defaultErrno"]) == (
        "SCMP_ACT_ERRNO",
        38,
        "ENOSYS",
    )
    assert profile["archMap"][0] == {
        "architecture": "SCMP_ARCH_X86_64",
        "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    }
    for rule in profile["syscalls"]:
        assert list(rule)[:5] == ["names", "action", "args", "comment", "includes"]
        assert "name" not in rule
        # errnoRet and errno only on the rules that refuse, after the filters.
        errno_fields = ["errnoRet", "errno"] if rule["action"] == "SCMP_ACT_ERRNO" else []
        assert list(rule)[5:] == ["excludes", *errno_fields]
    # One rule has no conditions written as null rather than [] (the capability-holding socket rule).
    assert [rule["names"] for rule in profile["syscalls"] if rule["args"] is None] == [["socket"]]


def test_userfaultfd_moved_from_the_refused_to_an_allow_rule_of_its_own() -> None:
    rules = _profile()["syscalls"]
    assert rules[-1] == {
        "names": ["userfaultfd"],
        "action": "SCMP_ACT_ALLOW",
        "args": [],
        "comment": "",
        "includes": {},
        "excludes": {},
    }
    refusing = [
        rule for rule in rules if "userfaultfd" in rule["names"] and rule["action"] != "SCMP_ACT_ALLOW"
    ]
    assert refusing == []
    first = rules[0]
    assert (first["action"], first["errno"], first["errnoRet"]) == ("SCMP_ACT_ERRNO", "EPERM", 1)
    assert "vmsplice" in first["names"]
    assert "reboot" in rules[1]["names"]  # allowed by the profile: CAP_SYS_BOOT decides


def test_the_installed_profile_is_where_the_localhost_profile_names_it(tmp_path: Path) -> None:
    assert profile_path(tmp_path) == tmp_path / "seccomp" / LOCALHOST_PROFILE
    assert LOCALHOST_PROFILE == "kubevirt/kubevirt.json"


def test_install_writes_the_profile_owner_only_once(tmp_path: Path) -> None:
    root = tmp_path / "kubelet"
    root.mkdir(mode=0o755)
    assert install_profile(root) is True
    path = root / "seccomp" / "kubevirt" / "kubevirt.json"
    assert path.read_bytes() == profile_bytes()
    assert _mode(root / "seccomp") == _mode(root / "seccomp" / "kubevirt") == _mode(path) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["kubevirt.json"]  # no temporary left
    before = path.stat()

    assert install_profile(root) is False
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert _mode(root) == 0o755  # an existing directory keeps its mode


def test_install_rewrites_a_profile_that_differs(tmp_path: Path) -> None:
    path = profile_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(profile_bytes().replace(b'"userfaultfd"', b'"getpid"'))
    assert install_profile(tmp_path) is True
    assert path.read_bytes() == profile_bytes()
    assert _mode(path) == 0o700
    assert install_profile(tmp_path) is False


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_source: object, _target: object) -> None:
        raise OSError("read-only file system")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="read-only"):
        install_profile(tmp_path)
    assert list(profile_path(tmp_path).parent.iterdir()) == []


def _installer(root: Path, *gates: str) -> ProfileInstaller:
    config = ClusterConfig(feature_gates=frozenset(gates))
    return ProfileInstaller(root, lambda: config)


def test_the_gate_turns_installing_on(tmp_path: Path) -> None:
    _installer(tmp_path, KUBEVIRT_SECCOMP_PROFILE_GATE).config_changed()
    assert profile_path(tmp_path).read_bytes() == profile_bytes()


def test_without_the_gate_nothing_is_written(tmp_path: Path) -> None:
    _installer(tmp_path, "Snapshot").config_changed()
    assert list(tmp_path.iterdir()) == []


def test_an_installation_that_fails_is_logged_not_raised(tmp_path: Path) -> None:
    root = tmp_path / "not-a-directory"
    root.write_text("")
    with structlog.testing.capture_logs() as logs:
        _installer(root, KUBEVIRT_SECCOMP_PROFILE_GATE).config_changed()
    assert root.read_text() == ""
    assert [(log["log_level"], log["event"]) for log in logs] == [
        ("error", "cannot install KubeVirt's seccomp profile")
    ]


def test_the_handlers_configuration_installs_once_the_gate_is_on(tmp_path: Path) -> None:
    config = ConfigFollower.from_informer(SharedInformerFactory(FakeKubeApi()), None)
    config.on_change(ProfileInstaller(tmp_path, config.current).config_changed)

    def kubevirt(*gates: str) -> dict[str, Any]:
        developer = {"featureGates": list(gates)}
        return {
            "metadata": {"namespace": "kubevirt"},
            "spec": {"configuration": {"developerConfiguration": developer}},
        }

    config.observe(kubevirt("Snapshot"))
    assert not profile_path(tmp_path).exists()
    config.observe(kubevirt("Snapshot", KUBEVIRT_SECCOMP_PROFILE_GATE))
    assert profile_path(tmp_path).read_bytes() == profile_bytes()
