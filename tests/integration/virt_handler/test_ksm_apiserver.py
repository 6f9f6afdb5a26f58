"""virt-handler's KSM handling labels and annotates a Node of a real kube-apiserver (sysfs is a stand-in)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.client import NODES, KubeClient
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_handler.ksm import KsmHandler


@pytest.fixture
def node(kube: KubeClient) -> Iterator[str]:
    name = f"ksm-{uuid.uuid4().hex[:8]}"
    kube.create(NODES, None, {"metadata": {"name": name, "labels": {"pool": "dense"}}})
    yield name
    kube.delete(NODES, None, name)


def test_a_selected_node_under_memory_pressure_runs_ksm(kube: KubeClient, node: str, tmp_path: Path) -> None:
    ksm = tmp_path / "ksm"
    ksm.mkdir()
    for name, value in (("run", "0"), ("pages_to_scan", "100"), ("sleep_millisecs", "20")):
        (ksm / name).write_text(value)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 16777216 kB\nMemAvailable: 1048576 kB\n")
    config = ClusterConfig.from_kubevirt(
        {
            "spec": {
                "configuration": {
                    "ksmConfiguration": {"nodeLabelSelector": {"matchLabels": {"pool": "dense"}}}
                }
            }
        }
    )
    handler = KsmHandler(api=kube, node=node, config=lambda: config, ksm_dir=ksm, meminfo=meminfo)
    assert handler.spin() is True
    metadata = kube.get(NODES, None, node)["metadata"]
    assert metadata["labels"]["kubevirt.io/ksm-enabled"] == "true"
    assert metadata["labels"]["pool"] == "dense"
    assert metadata["annotations"]["kubevirt.io/ksm-handler-managed"] == "true"
    assert (ksm / "run").read_text() == "1"

    config = ClusterConfig()  # the cluster no longer asks for KSM: what we started is stopped
    assert handler.spin() is False
    assert kube.get(NODES, None, node)["metadata"]["labels"]["kubevirt.io/ksm-enabled"] == "false"
    assert (ksm / "run").read_text() == "0"
