"""The objects a density run creates: the test guest from its containerDisk with small, equal requests and
limits, as a VMI or as a VM that runs it (runStrategy Always), on the pod network (masquerade) or on none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..layout import image_name

JSON = dict[str, Any]
LABEL = "density.kubevirt.io/run"


@dataclass(frozen=True)
class Shape:
    cpu: str = "100m"
    memory: str = "128Mi"
    # "masquerade" (the pod network, as KubeVirt's density test) or "none".
    network: str = "masquerade"
    cpu_limit: bool = True


def vmi_spec(shape: Shape) -> JSON:
    resources = {"cpu": shape.cpu, "memory": shape.memory}
    limits = dict(resources) if shape.cpu_limit else {"memory": shape.memory}
    devices: JSON = {"disks": [{"name": "containerdisk", "disk": {"bus": "virtio"}}]}
    spec: JSON = {
        "terminationGracePeriodSeconds": 0,
        "domain": {"devices": devices, "resources": {"requests": resources, "limits": limits}},
        "volumes": [
            {"name": "containerdisk", "containerDisk": {"image": image_name("test-guest-container-disk")}}
        ],
    }
    if shape.network == "masquerade":
        devices["interfaces"] = [{"name": "default", "masquerade": {}}]
        spec["networks"] = [{"name": "default", "pod": {}}]
    else:
        devices["autoattachPodInterface"] = False
    return spec


def vmi(name: str, shape: Shape, run: str) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "labels": {LABEL: run}},
        "spec": vmi_spec(shape),
    }


def vm(name: str, shape: Shape, run: str) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "labels": {LABEL: run}},
        "spec": {
            "runStrategy": "Always",
            "template": {"metadata": {"labels": {LABEL: run}}, "spec": vmi_spec(shape)},
        },
    }
