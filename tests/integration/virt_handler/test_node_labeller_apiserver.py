"""The node labeller end to end: the ``node-labeller`` helper asks a real libvirtd (TCG) for the node's
capabilities, and virt-handler's labeller writes them as labels on a Node of a real kube-apiserver."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import NODES, ApiError, KubeClient
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_handler.node_labeller import capabilities
from kubevirt.virt_handler.node_labeller.labeller import NodeLabeller, labels_patch

CAPS_CACHE = Path(os.environ.get("KUBEVIRT_CACHE", "/var/cache/kubevirt-py")) / "libvirt-qemu-capabilities"
HELPER = shutil.which("node-labeller") or str(Path(sys.executable).parent / "node-labeller")


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.seen.append((event_type, reason))


@pytest.fixture(scope="module")
def node_capabilities(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("labeller")
    out = work / "out"
    result = subprocess.run(
        [
            HELPER,
            "--output-dir", str(out),
            "--libvirt-runtime-dir", str(work / "rt"),
            "--libvirt-capabilities-cache", str(CAPS_CACHE),
            "--force-emulation",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.fixture
def node(kube: KubeClient) -> Any:
    name = f"labelled-{uuid.uuid4().hex[:8]}"
    kube.create(
        NODES, None, {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "stale": "no"}}}
    )
    yield name
    kube.delete(NODES, None, name)


def test_the_node_gets_its_libvirt_labels_and_loses_stale_ones(
    kube: KubeClient, node: str, node_capabilities: Path
) -> None:
    caps = capabilities.load(node_capabilities)
    assert caps.host_model is not None
    kube.patch(
        NODES,
        None,
        node,
        {"metadata": {"labels": {"cpu-model.node.kubevirt.io/Gone": "true"}}},
        patch_type="merge",
    )
    config = ClusterConfig()
    events = Events()
    labeller = NodeLabeller(api=kube, events=events, node=node, capabilities=caps, config=lambda: config)
    labeller.reconcile(node)
    labels = kube.get(NODES, None, node)["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == node
    assert labels["stale"] == "no"
    assert "cpu-model.node.kubevirt.io/Gone" not in labels
    assert labels[f"host-model-cpu.node.kubevirt.io/{caps.host_model.name}"] == "true"
    assert labels["machine-type.node.kubevirt.io/q35"] == "true"
    assert labels["cpu-feature.node.kubevirt.io/fpu"] == "true"
    assert "cpu-model.node.kubevirt.io/qemu64" not in labels  # obsolete by KubeVirt's default list
    version = kube.get(NODES, None, node)["metadata"]["resourceVersion"]
    labeller.reconcile(node)  # unchanged: no write
    assert kube.get(NODES, None, node)["metadata"]["resourceVersion"] == version

    # The cluster declares the host model obsolete: the node says so, with a warning.
    config = ClusterConfig.from_kubevirt(
        {"spec": {"configuration": {"obsoleteCPUModels": {caps.host_model.name: True}}}}
    )
    labeller.reconcile(node)
    labels = kube.get(NODES, None, node)["metadata"]["labels"]
    assert labels["node-labeller.kubevirt.io/obsolete-host-model"] == "true"
    assert labels["cpu-model.node.kubevirt.io/qemu64"] == "true"  # the configured list replaces the default
    assert events.seen == [("Warning", "HostModelIsObsolete")]


def test_a_patch_from_stale_labels_is_refused(kube: KubeClient, node: str) -> None:
    stale = {"kubernetes.io/hostname": node}  # the node also has "stale": the test operation fails
    with pytest.raises(ApiError):
        kube.patch(NODES, None, node, labels_patch(stale, {"x": "y"}), patch_type="json")
    assert "x" not in kube.get(NODES, None, node)["metadata"]["labels"]


def test_a_patch_read_from_an_unlabelled_node_keeps_labels_added_meanwhile(kube: KubeClient) -> None:
    name = f"bare-{uuid.uuid4().hex[:8]}"
    kube.create(NODES, None, {"metadata": {"name": name}})  # no labels at all, as the read saw it
    try:
        kube.patch(NODES, None, name, labels_patch(None, {"x": "y"}), patch_type="json")
        assert kube.get(NODES, None, name)["metadata"]["labels"] == {"x": "y"}
        kube.patch(NODES, None, name, [{"op": "remove", "path": "/metadata/labels"}], patch_type="json")
        # The heartbeat labels the node between the labeller's read and its patch.
        heartbeat = {"metadata": {"labels": {"kubevirt.io/schedulable": "true"}}}
        kube.patch(NODES, None, name, heartbeat, patch_type="merge")
        with pytest.raises(ApiError):
            kube.patch(NODES, None, name, labels_patch(None, {"x": "y"}), patch_type="json")
        assert kube.get(NODES, None, name)["metadata"]["labels"] == {"kubevirt.io/schedulable": "true"}
    finally:
        kube.delete(NODES, None, name)
