"""Files in a pod's root: symlinks are followed inside the pod, never out of it."""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from kubevirt.network import cache
from kubevirt.network.dhcp.config import DHCPConfig
from kubevirt.podroot import PodPathError, PodRoot


def test_symlinks_resolve_inside_the_pod(tmp_path: Path) -> None:
    pod = tmp_path / "pod"
    (pod / "run").mkdir(parents=True)
    (pod / "var").mkdir()
    os.symlink("/run", pod / "var" / "run")  # as in most images: absolute, meant for the pod's root
    root = PodRoot(pod)
    root.write("/var/run/kubevirt-private/vif-cache-eth0.json", b"{}")
    assert (pod / "run" / "kubevirt-private" / "vif-cache-eth0.json").read_bytes() == b"{}"
    assert root.read("var/run/kubevirt-private/vif-cache-eth0.json") == b"{}"
    root.remove("var/run/kubevirt-private/vif-cache-eth0.json")
    root.remove("var/run/kubevirt-private/vif-cache-eth0.json")  # absent: no error
    assert not (pod / "run" / "kubevirt-private" / "vif-cache-eth0.json").exists()


def test_a_pod_cannot_redirect_writes_to_the_node(tmp_path: Path) -> None:
    pod, node = tmp_path / "pod", tmp_path / "node"
    pod.mkdir()
    node.mkdir()
    os.symlink(str(node), pod / "escape")  # absolute: on the node this would be the node's directory
    os.symlink("../../node", pod / "climb")
    root = PodRoot(pod)
    with pytest.raises(PodPathError):
        root.write("escape/file", b"x")  # the link's target is looked up in the pod, where it is absent
    (pod / "node").mkdir()
    root.write("climb/other", b"y")  # ".." stops at the pod's root: this is the pod's /node
    assert list(node.iterdir()) == []
    assert (pod / "node" / "other").read_bytes() == b"y"
    os.symlink("target", pod / "link-file")
    with pytest.raises(PodPathError):
        root.read("link-file")  # the final component is never a symlink


def test_the_dhcp_cache_is_readable_by_the_non_root_launcher_in_an_fs_group_directory() -> None:
    # The private volume as the kubelet lays out an emptyDir for fsGroup 107: group 107, setgid, so the file
    # virt-handler (root) writes belongs to group 107, the non-root launcher's own group.
    root = Path(tempfile.mkdtemp(dir="/tmp"))  # a path the launcher's user may walk
    root.chmod(0o755)
    private = root / "var/run/kubevirt-private"
    private.mkdir(parents=True)
    os.chown(private, 0, 107)
    os.chmod(private, 0o2777)
    config = DHCPConfig(
        name="eth0", ip=ipaddress.IPv4Interface("10.244.0.7/24"), mac="02:00:00:00:00:01", mtu=1400
    )
    cache.write_dhcp_cache(PodRoot(root), "eth0", config)
    path = private / "vif-cache-eth0.json"
    read = subprocess.run(
        ["setpriv", "--reuid", "107", "--regid", "107", "--groups", "107", "cat", str(path)],
        capture_output=True,
        check=False,
    )
    assert read.returncode == 0, read.stderr
    assert cache.read_dhcp_cache(PodRoot(root), "eth0") == config
    shutil.rmtree(root)
