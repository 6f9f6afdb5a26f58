"""The common instance types and preferences bundle: the published sizes, valid objects, and VMs that
use them render with their sizes and shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubevirt.admission import pipeline
from kubevirt.admission.schema import schema_check
from kubevirt.virt_operator.resource.common_instancetypes import (
    bundle_for,
    cluster_instancetypes,
    cluster_preferences,
    deploys_common_instancetypes,
)
from kubevirt.virtctl.root import root

MANIFESTS = Path(__file__).parents[3] / "manifests" / "common-instancetypes"

# (vCPUs, guest memory) per size, as the common-instancetypes release publishes them.
PUBLISHED = {
    "u1": {
        "nano": (1, "512Mi"),
        "micro": (1, "1Gi"),
        "small": (1, "2Gi"),
        "medium": (1, "4Gi"),
        "2xmedium": (2, "4Gi"),
        "large": (2, "8Gi"),
        "xlarge": (4, "16Gi"),
        "2xlarge": (8, "32Gi"),
        "4xlarge": (16, "64Gi"),
        "8xlarge": (32, "128Gi"),
    },
    "o1": {
        "nano": (1, "512Mi"),
        "micro": (1, "1Gi"),
        "small": (1, "2Gi"),
        "medium": (1, "4Gi"),
        "large": (2, "8Gi"),
        "xlarge": (4, "16Gi"),
        "2xlarge": (8, "32Gi"),
        "4xlarge": (16, "64Gi"),
        "8xlarge": (32, "128Gi"),
    },
    "cx1": {
        "medium": (1, "2Gi"),
        "large": (2, "4Gi"),
        "xlarge": (4, "8Gi"),
        "2xlarge": (8, "16Gi"),
        "4xlarge": (16, "32Gi"),
        "8xlarge": (32, "64Gi"),
    },
    "m1": {
        "large": (2, "16Gi"),
        "xlarge": (4, "32Gi"),
        "2xlarge": (8, "64Gi"),
        "4xlarge": (16, "128Gi"),
        "8xlarge": (32, "256Gi"),
    },
}


def by_name(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {obj["metadata"]["name"]: obj for obj in objects}


def test_the_series_have_the_published_sizes() -> None:
    instancetypes = by_name(cluster_instancetypes())
    expected = {
        f"{series}.{size}": sized for series, sizes in PUBLISHED.items() for size, sized in sizes.items()
    }
    # cx1 and m1 also come with 1Gi huge pages.
    expected |= {f"{name}1gi": sized for name, sized in expected.items() if name.startswith(("cx1.", "m1."))}
    assert set(instancetypes) == set(expected)
    for name, (cpus, memory) in expected.items():
        spec = instancetypes[name]["spec"]
        assert (spec["cpu"]["guest"], spec["memory"]["guest"]) == (cpus, memory), name


def test_series_traits() -> None:
    instancetypes = by_name(cluster_instancetypes())
    assert instancetypes["o1.small"]["spec"]["memory"]["overcommitPercent"] == 50
    cx = instancetypes["cx1.large1gi"]["spec"]
    assert cx["cpu"]["dedicatedCPUPlacement"] is True
    assert cx["cpu"]["isolateEmulatorThread"] is True
    assert cx["cpu"]["maxSockets"] == 2
    assert cx["memory"]["hugepages"] == {"pageSize": "1Gi"}
    assert instancetypes["m1.large"]["spec"]["memory"]["hugepages"] == {"pageSize": "2Mi"}
    assert "hugepages" not in instancetypes["u1.small"]["spec"]["memory"]
    labels = instancetypes["u1.small"]["metadata"]["labels"]
    assert labels["instancetype.kubevirt.io/cpu"] == "1"
    assert labels["instancetype.kubevirt.io/memory"] == "2Gi"
    assert labels["instancetype.kubevirt.io/class"] == "general.purpose"


def test_os_preferences() -> None:
    preferences = by_name(cluster_preferences())
    assert {
        "fedora",
        "ubuntu",
        "rhel.9",
        "centos.stream9",
        "cirros",
        "windows.11",
        "windows.11.virtio",
    } <= set(preferences)
    fedora = preferences["fedora"]["spec"]
    assert fedora["devices"]["preferredDiskBus"] == "virtio"
    assert fedora["requirements"] == {"cpu": {"guest": 1}, "memory": {"guest": "2Gi"}}
    windows = preferences["windows.11"]["spec"]
    assert windows["devices"]["preferredDiskBus"] == "sata"
    assert windows["devices"]["preferredTPM"] == {"persistent": True}
    assert windows["firmware"]["preferredEfi"] == {"secureBoot": True, "persistent": True}
    assert windows["requirements"]["cpu"] == {"guest": 2}
    assert preferences["windows.11.virtio"]["spec"]["devices"]["preferredDiskBus"] == "virtio"
    # Traits are copied, not shared: changing one preference leaves the others alone.
    windows["devices"]["preferredDiskBus"] = "scsi"
    assert cluster_preferences()[0] is not None
    assert by_name(cluster_preferences())["windows.11"]["spec"]["devices"]["preferredDiskBus"] == "sata"


@pytest.mark.parametrize(
    "obj", [*cluster_instancetypes(), *cluster_preferences()], ids=lambda o: o["metadata"]["name"]
)
def test_every_object_passes_admission(obj: dict[str, Any]) -> None:
    assert pipeline.validate_instancetype_object(obj, schema=schema_check).causes == []


def test_the_generated_manifests_hold_the_bundle() -> None:
    for filename, objects in (
        ("common-clusterinstancetypes-bundle.yaml", cluster_instancetypes()),
        ("common-clusterpreferences-bundle.yaml", cluster_preferences()),
    ):
        documents = [d for d in yaml.safe_load_all((MANIFESTS / filename).read_text()) if d]
        assert documents == objects


def test_the_kubevirt_cr_can_turn_the_bundle_off() -> None:
    assert deploys_common_instancetypes({})
    assert deploys_common_instancetypes({"spec": {"configuration": {"commonInstancetypesDeployment": {}}}})
    off = {"spec": {"configuration": {"commonInstancetypesDeployment": {"enabled": False}}}}
    assert not deploys_common_instancetypes(off)
    assert bundle_for(off) == []
    assert len(bundle_for({})) == len(cluster_instancetypes()) + len(cluster_preferences())


def test_a_vm_with_u1_small_and_fedora_renders_their_size_and_shape(tmp_path: Path) -> None:
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "default"},
        "spec": {
            "runStrategy": "Always",
            "instancetype": {"name": "u1.small"},
            "preference": {"name": "fedora"},
            "template": {
                "spec": {
                    "domain": {"devices": {}},
                    "volumes": [
                        {"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:41"}}
                    ],
                }
            },
        },
    }
    manifest = tmp_path / "vm.json"
    manifest.write_text(json.dumps(vm))
    objects = ["--objects", str(MANIFESTS / "common-clusterinstancetypes-bundle.yaml")]
    objects += ["--objects", str(MANIFESTS / "common-clusterpreferences-bundle.yaml")]
    validated = CliRunner().invoke(root, ["validate", "-f", str(manifest), *objects])
    assert (validated.exit_code, json.loads(validated.stdout)) == (0, [])
    rendered = CliRunner().invoke(root, ["render", "-f", str(manifest), *objects])
    assert rendered.exit_code == 0, rendered.stderr
    assert '<memory unit="b">2147483648</memory>' in rendered.stdout
    assert '<target bus="virtio" dev="vda">' in rendered.stdout
    assert '<rng model="virtio-non-transitional">' in rendered.stdout  # fedora's preferredRng
    assert '<loader readonly="yes" secure="yes" type="pflash">' in rendered.stdout  # and secure boot
