"""What virt-launcher takes from its requests and flags is checked before it names files or URIs."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from kubevirt.virt_launcher.libvirtd import Libvirtd, LibvirtdError
from kubevirt.virt_launcher.virtwrap.converter.conversion import join_base
from kubevirt.virt_launcher.virtwrap.vmi import InvalidVMIError, read_vmi, vmi_facts


def vmi(uid: str) -> dict[str, object]:
    return {"metadata": {"name": "vm", "namespace": "default", "uid": uid}, "spec": {}}


@pytest.mark.parametrize("uid", ["6a1a24a1-4061-4607-8bf4-a3963d0c5895", "u-1", "abc", "a.b_c"])
def test_uids_that_name_a_directory_safely_are_taken(uid: str) -> None:
    assert vmi_facts(vmi(uid)).uid == uid


@pytest.mark.parametrize("uid", ["../etc", "..", "a/b", "a&socket=/tmp/x", "a b", "-a", "a..b", "x" * 200])
def test_uids_that_could_escape_a_directory_or_a_uri_are_refused(uid: str) -> None:
    with pytest.raises(InvalidVMIError, match=r"^metadata\.uid: .* is not a UID"):
        vmi_facts(vmi(uid))


def test_deeply_nested_vmi_json_is_refused_in_one_line() -> None:
    raw = json.dumps({"metadata": {"name": "vm"}, "spec": {"x": json.loads("[" * 500 + "]" * 500)}})
    with pytest.raises(
        InvalidVMIError, match=r"^vmi: malformed VMI JSON: nested deeper than 100 levels at spec\.x"
    ):
        read_vmi(raw.encode())


@pytest.mark.parametrize(
    ("path", "joined"),
    [
        ("/images/disk.img", "/base/disk.img"),
        ("disk.img/", "/base/disk.img"),
        ("..", "/"),
        ("/a/b/..", "/"),
        (".", "/base"),
        ("", "/base"),
        ("///", "/base"),
    ],
)
def test_join_base_cleans_like_go(path: str, joined: str) -> None:
    assert join_base("/base", path) == joined


def test_join_base_cleans_the_directory_too() -> None:
    assert join_base("/var/run//kubevirt-private/vmi-disks/d/", "..") == "/var/run/kubevirt-private/vmi-disks"


def test_the_start_script_quotes_every_path(tmp_path: Path) -> None:
    runtime = tmp_path / "a dir; $(touch pwned) 'x'"
    script = Libvirtd(runtime, binary="lib virtd").start_script()
    words = shlex.split(script)
    assert str(runtime / "etc") in words
    assert str(runtime / "etc" / "libvirtd.conf") in words
    assert "lib virtd" in words
    assert "$(touch" not in words


def test_the_config_quotes_the_socket_directory(tmp_path: Path) -> None:
    runtime = tmp_path / "with space"
    Libvirtd(runtime).write_config()
    conf = (runtime / "etc" / "libvirtd.conf").read_text()
    assert f'unix_sock_dir = "{runtime / "sock"}"\n' in conf


@pytest.mark.parametrize("bad", ['quote"d', "back\\slash", "line\nbreak"])
def test_a_path_the_config_cannot_hold_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(LibvirtdError, match="not allowed"):
        Libvirtd(tmp_path / bad).write_config()


def test_the_libvirt_uri_escapes_the_socket_path(tmp_path: Path) -> None:
    uri = Libvirtd(tmp_path / "a&b=c?d").uri
    assert "&b=" not in uri
    assert uri.endswith("a%26b%3Dc%3Fd/sock/libvirt-sock")
