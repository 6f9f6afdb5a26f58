"""The whole virt-handler application against a real kube-apiserver: started, it labels its own Node
(heartbeat, libvirt capabilities, KSM eligibility); stopped, it marks the Node unschedulable."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.client import NODES, KubeClient
from kubevirt.virt_handler.app import Options, VirtHandler

TESTDATA = Path(__file__).parents[2] / "unit" / "virt_handler" / "testdata" / "node_labeller"

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def node(kube: KubeClient) -> Iterator[str]:
    name = f"handler-{uuid.uuid4().hex[:8]}"
    kube.create(NODES, None, {"metadata": {"name": name}})
    yield name
    kube.delete(NODES, None, name)


def test_virt_handler_labels_its_node_and_marks_it_unschedulable_when_stopping(
    kube: KubeClient, node: str, tmp_path: Path
) -> None:
    labeller_dir = tmp_path / "labeller"
    shutil.copytree(TESTDATA, labeller_dir)
    plugins_dir = Path(tempfile.mkdtemp(prefix="dp", dir="/tmp"))  # short: unix socket paths
    options = Options(
        node_name=node,
        pods_dir=tmp_path / "pods",
        device_plugins_dir=plugins_dir,
        node_labeller_dir=labeller_dir,
        share_dir=plugins_dir / "share",
    )
    handler = VirtHandler(options, kube)
    result: list[int] = []
    runner = threading.Thread(target=lambda: result.append(handler.run()))
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while True:
            labels = kube.get(NODES, None, node)["metadata"].get("labels") or {}
            wanted = (
                "kubevirt.io/schedulable",
                "host-model-cpu.node.kubevirt.io/EPYC",
                "kubevirt.io/ksm-enabled",
            )
            if all(key in labels for key in wanted):
                break
            assert time.monotonic() < deadline, f"the node's labels: {sorted(labels)}"
            time.sleep(0.2)
        assert labels["kubevirt.io/schedulable"] == "true"
        assert labels["machine-type.node.kubevirt.io/q35"] == "true"
        assert labels["kubevirt.io/ksm-enabled"] == "false"  # the cluster configures no KSM
        # Launchers' events arrive there; it is served once the VMI cache has synced, maybe after the labels.
        notify_socket = plugins_dir / "share" / "domain-notify.sock"
        while not notify_socket.is_socket():
            assert time.monotonic() < deadline, "the notify socket was never served"
            time.sleep(0.2)
    finally:
        handler.stop()
        runner.join(30)
        shutil.rmtree(plugins_dir, ignore_errors=True)
    assert result == [0]
    assert kube.get(NODES, None, node)["metadata"]["labels"]["kubevirt.io/schedulable"] == "false"
