"""The hostpath CSI driver's processes as cluster-up runs them: the controller and every node's plugin are
given one shared data directory, which is no node's, every node sees at the host's path, cluster-up makes
and cluster-down's loop device sweep covers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import nodes  # noqa: E402
from localcluster.csi import deploy  # noqa: E402
from localcluster.layout import MAX_NODES, Layout  # noqa: E402


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(state=tmp_path / "state", cache=tmp_path / "cache")


def _option(argv: list[str], name: str) -> list[str]:
    return [arg.removeprefix(f"--{name}=") for arg in argv if arg.startswith(f"--{name}=")]


def test_the_controller_and_every_node_plugin_share_one_data_directory(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deploy, "_binary", lambda _layout, name: name)  # no CSI build needed
    (controller, *_sidecars) = deploy.controller_processes(layout)
    assert controller.name == deploy.CONTROLLER
    shared = str(deploy.shared_dir(layout))
    assert _option(controller.argv, "shared-dir") == [shared]
    node_dirs = {str(deploy.data_dir(layout, layout.node(i))) for i in range(1, MAX_NODES + 1)}
    assert {entry.split("=", 1)[1] for entry in _option(controller.argv, "controller")} == node_dirs
    assert shared not in node_dirs
    for index in range(1, MAX_NODES + 1):
        node = layout.node(index)
        plugin = deploy.node_plugin(node)
        assert _option(plugin.argv, "shared-dir") == [shared]
        assert _option(plugin.argv, "data-dir") == [str(deploy.data_dir(layout, node))]
        # Not in a node's private copy of a host directory: every node sees the same files there.
        assert nodes.host_path(node, Path(shared)) == Path(shared)


def test_cluster_up_makes_the_shared_directory_and_down_sweeps_its_loop_devices(layout: Layout) -> None:
    deploy.prepare(layout)
    assert deploy.shared_dir(layout).is_dir()
    image = deploy.shared_dir(layout) / "volumes" / "0123456789abcdef0123456789abcdef.img"
    assert deploy._ours(layout, str(image))
    assert not deploy._ours(layout, "/var/tmp/other.img")


def test_a_kubelet_loop_device_over_ours_is_ours_even_when_its_path_no_longer_resolves(
    layout: Layout,
) -> None:
    """cluster-down detaches the kubelet's loop device over a volume's loop device first, also when it was
    made in a node's mount namespace that is gone (its backing path reads "/"), and leaves others alone."""
    image = str(deploy.shared_dir(layout) / "volumes" / "0123456789abcdef0123456789abcdef.img")
    volume = deploy.LoopDevice("/dev/loop0", f"{image} (deleted)", ("254:0", 1048593))
    kubelets = deploy.LoopDevice("/dev/loop1", "/", ("0:6", 93))
    other = deploy.LoopDevice("/dev/loop2", "/", ("0:6", 95))
    unrelated = deploy.LoopDevice("/dev/loop3", "/var/tmp/other.img", ("254:0", 7))
    nodes = {"/dev/loop0": ("0:6", 93), "/dev/loop1": ("0:6", 94), "/dev/loop2": ("0:6", 95)}
    found = deploy.ours(layout, [volume, kubelets, other, unrelated], nodes.get)
    assert [loop.name for loop in found] == ["/dev/loop1", "/dev/loop0"]


def test_a_cold_machine_has_no_cluster_running_before_the_csi_build(layout: Layout) -> None:
    # The functional tier asks first thing whether a cluster runs; on a machine whose cache is empty the
    # CSI binaries do not exist yet, and the answer must be "no", not a missing-binary error.
    from localcluster import cluster

    assert not (deploy.build_dir(layout) / "bin").exists()
    assert cluster.running(layout) is False
