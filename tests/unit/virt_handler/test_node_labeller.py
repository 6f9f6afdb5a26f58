"""The node labeller against capabilities captured from this project's libvirt 9.0 / QEMU 7.2 under TCG."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import NODES
from kubevirt.controller import SharedInformerFactory
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_config.follower import ConfigFollower
from kubevirt.virt_handler.node_labeller import capabilities, labels
from kubevirt.virt_handler.node_labeller.capabilities import CapabilitiesError, HostCapabilities
from kubevirt.virt_handler.node_labeller.host import realtime_capable
from kubevirt.virt_handler.node_labeller.labeller import NodeLabeller, labels_patch
from kubevirt_testing.fake_kube_api import FakeKubeApi

TESTDATA = Path(__file__).parent / "testdata" / "node_labeller"
NODE = "node01"


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.seen.append((event_type, reason, message))


@pytest.fixture(scope="module")
def caps() -> HostCapabilities:
    return capabilities.load(TESTDATA)


def test_the_captured_capabilities_parse(caps: HostCapabilities) -> None:
    assert caps.host_model is not None
    assert (caps.host_model.name, caps.host_model.vendor) == ("EPYC", "AMD")
    assert {"acpi", "hypervisor", "npt"} <= caps.host_model.required_features
    assert "vme" not in caps.host_model.required_features  # policy='disable'
    assert "qemu64" in caps.usable_models
    assert "Westmere" in caps.usable_models
    assert "phenom" not in caps.usable_models
    assert "phenom" in caps.known_models
    assert {"avx2", "aes", "fpu"} <= caps.supported_features
    assert "3dnowprefetch" not in caps.supported_features
    assert "pc-q35-7.2" in caps.machines
    assert "q35" in caps.machines
    assert len(caps.machines) == len(set(caps.machines))
    assert caps.tsc is not None
    assert caps.tsc.frequency == 2596140000
    assert caps.tsc.scalable is False
    assert (caps.sev, caps.sev_es, caps.secure_execution) == (False, False, False)


def test_labels_with_kubevirts_default_obsolete_models(caps: HostCapabilities) -> None:
    result = labels.node_labels(caps, obsolete=None)
    assert result["cpu-model.node.kubevirt.io/Westmere"] == "true"
    assert "cpu-model.node.kubevirt.io/phenom" not in result  # not usable under TCG
    for obsolete in ("qemu64", "kvm64", "pentium", "core2duo"):
        assert f"cpu-model.node.kubevirt.io/{obsolete}" not in result
        assert f"cpu-model-migration.node.kubevirt.io/{obsolete}" not in result
    assert result["cpu-model-migration.node.kubevirt.io/Snowridge"] == "true"  # known, though unusable
    assert result["cpu-feature.node.kubevirt.io/avx2"] == "true"
    assert result["host-model-cpu.node.kubevirt.io/EPYC"] == "true"
    assert result["host-model-required-features.node.kubevirt.io/npt"] == "true"
    assert result["cpu-vendor.node.kubevirt.io/AMD"] == "true"
    assert result["machine-type.node.kubevirt.io/pc-q35-7.2"] == "true"
    assert result["cpu-timer.node.kubevirt.io/tsc-frequency"] == "2596140000"
    assert result["cpu-timer.node.kubevirt.io/tsc-scalable"] == "false"
    # Without a configured list the host model is never called obsolete.
    assert "node-labeller.kubevirt.io/obsolete-host-model" not in result
    assert all(labels.valid_name(key.split("/", 1)[1]) for key in result if "/" in key)


def test_a_configured_obsolete_list_replaces_the_default(caps: HostCapabilities) -> None:
    result = labels.node_labels(caps, obsolete=frozenset({"Westmere", "EPYC"}))
    assert "cpu-model.node.kubevirt.io/Westmere" not in result
    assert result["cpu-model.node.kubevirt.io/qemu64"] == "true"
    assert result["node-labeller.kubevirt.io/obsolete-host-model"] == "true"


def test_realtime_sev_and_hyperv_labels() -> None:
    caps = HostCapabilities(sev=True, sev_es=True)
    result = labels.node_labels(caps, obsolete=None, realtime=True, hyperv=["synic", "base"])
    assert result == {
        "kubevirt.io/realtime": "true",
        "kubevirt.io/sev": "true",
        "kubevirt.io/sev-es": "true",
        "hyperv.node.kubevirt.io/synic": "true",
        "hyperv.node.kubevirt.io/base": "true",
    }


def test_realtime_reads_the_scheduler_limit(tmp_path: Path) -> None:
    limit = tmp_path / "sched_rt_runtime_us"
    limit.write_text("-1\n")
    assert realtime_capable(limit) is True
    limit.write_text("950000\n")
    assert realtime_capable(limit) is False
    assert realtime_capable(tmp_path / "absent") is False


def test_a_name_the_api_would_refuse_is_left_out() -> None:
    caps = HostCapabilities(usable_models=("Good-1.0", "bad model", "x" * 70), known_models=())
    result = labels.node_labels(caps, obsolete=frozenset())
    assert list(result) == ["cpu-model.node.kubevirt.io/Good-1.0"]


def test_a_missing_or_broken_file_names_itself(tmp_path: Path) -> None:
    for name in ("virsh_domcapabilities.xml", "supported_features.xml", "capabilities.xml"):
        shutil.copy(TESTDATA / name, tmp_path / name)
    (tmp_path / "supported_features.xml").write_text("<cpu><feature")
    with pytest.raises(CapabilitiesError, match=r"supported_features\.xml: not well-formed XML"):
        capabilities.load(tmp_path)
    (tmp_path / "capabilities.xml").unlink()
    with pytest.raises(CapabilitiesError, match=r"capabilities\.xml: cannot read"):
        capabilities.load(tmp_path, features=False)


def _labeller(
    api: FakeKubeApi, caps: HostCapabilities, config: ClusterConfig, events: Events
) -> NodeLabeller:
    return NodeLabeller(api=api, events=events, node=NODE, capabilities=caps, config=lambda: config)


def test_the_labeller_replaces_stale_owned_labels_and_keeps_others(caps: HostCapabilities) -> None:
    api = FakeKubeApi()
    api.add(
        NODES,
        {
            "metadata": {
                "name": NODE,
                "labels": {
                    "kubernetes.io/hostname": NODE,
                    "kubevirt.io/schedulable": "true",
                    "cpu-model.node.kubevirt.io/Gone": "true",
                    "machine-type.node.kubevirt.io/pc-q35-1.0": "true",
                },
            }
        },
    )
    events = Events()
    labeller = _labeller(api, caps, ClusterConfig(), events)
    labeller.reconcile(NODE)
    node_labels = api.get(NODES, None, NODE)["metadata"]["labels"]
    assert node_labels["kubernetes.io/hostname"] == NODE
    assert node_labels["kubevirt.io/schedulable"] == "true"
    assert "cpu-model.node.kubevirt.io/Gone" not in node_labels
    assert "machine-type.node.kubevirt.io/pc-q35-1.0" not in node_labels
    assert node_labels["host-model-cpu.node.kubevirt.io/EPYC"] == "true"
    assert events.seen == []
    writes = len([w for w in api.writes if w[0] == "patch"])
    labeller.reconcile(NODE)  # nothing changed: no write
    assert len([w for w in api.writes if w[0] == "patch"]) == writes == 1


def test_the_labeller_follows_the_obsolete_models_and_warns(caps: HostCapabilities) -> None:
    api = FakeKubeApi()
    api.add(NODES, {"metadata": {"name": NODE}})
    events = Events()
    config = ClusterConfig.from_kubevirt(
        {"spec": {"configuration": {"obsoleteCPUModels": {"EPYC": True, "Westmere": False}}}}
    )
    _labeller(api, caps, config, events).reconcile(NODE)
    node_labels = api.get(NODES, None, NODE)["metadata"]["labels"]
    assert node_labels["node-labeller.kubevirt.io/obsolete-host-model"] == "true"
    assert "cpu-model.node.kubevirt.io/Westmere" not in node_labels  # a key in the map, whatever its value
    assert [(kind, reason) for kind, reason, _ in events.seen] == [("Warning", "HostModelIsObsolete")]
    assert "EPYC" in events.seen[0][2]


def test_a_node_marked_skip_is_left_alone(caps: HostCapabilities) -> None:
    api = FakeKubeApi()
    api.add(
        NODES,
        {"metadata": {"name": NODE, "annotations": {"node-labeller.kubevirt.io/skip-node": ""}}},
    )
    _labeller(api, caps, ClusterConfig(), Events()).reconcile(NODE)
    assert not api.get(NODES, None, NODE)["metadata"].get("labels")


def test_the_patch_tests_the_labels_it_read() -> None:
    assert labels_patch({"a": "1"}, {"a": "1", "b": "2"}) == [
        {"op": "test", "path": "/metadata/labels", "value": {"a": "1"}},
        {"op": "replace", "path": "/metadata/labels", "value": {"a": "1", "b": "2"}},
    ]
    assert labels_patch(None, {"b": "2"}) == [
        {"op": "test", "path": "/metadata/labels", "value": None},
        {"op": "add", "path": "/metadata/labels", "value": {"b": "2"}},
    ]


def test_a_new_cluster_configuration_relabels_the_node() -> None:
    config = ConfigFollower.from_informer(SharedInformerFactory(FakeKubeApi()), None)
    changes: list[str] = []
    config.on_change(lambda: changes.append("changed"))
    assert config.current().obsolete_cpu_models is None
    kubevirt = {
        "metadata": {"namespace": "kubevirt"},
        "spec": {"configuration": {"obsoleteCPUModels": {"EPYC": True}}},
    }
    config.observe(kubevirt)
    config.observe(kubevirt)  # the same configuration again: no change
    assert config.current().obsolete_cpu_models == frozenset({"EPYC"})
    assert changes == ["changed"]
