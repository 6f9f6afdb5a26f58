"""Files in a pod's root: symlinks are followed inside the pod, never out of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
