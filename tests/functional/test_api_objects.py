"""KubeVirt's CRDs on a real apiserver: the generated CRDs apply and become Established, and
VirtualMachines and VirtualMachineInstances are created and read back with kubectl and the Python client."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client, config
from localcluster.handle import Cluster

GROUP = "kubevirt.io"
REQUIRED_CRDS = ("virtualmachines.kubevirt.io", "virtualmachineinstances.kubevirt.io")


def _vmi_spec() -> dict[str, object]:
    return {
        "domain": {
            "resources": {"requests": {"memory": "128Mi"}},
            "devices": {"disks": [{"name": "rootdisk", "disk": {"bus": "virtio"}}]},
        },
        "volumes": [{"name": "rootdisk", "containerDisk": {"image": "localhost/kubevirt/cirros:devel"}}],
    }


def _vmi(name: str) -> dict[str, object]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name},
        "spec": _vmi_spec(),
    }


def _vm(name: str) -> dict[str, object]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {
            "runStrategy": "Halted",
            "template": {"metadata": {"labels": {"kubevirt.io/vm": name}}, "spec": _vmi_spec()},
        },
    }


def test_generated_crds_are_established(cluster: Cluster, crds: list[str]) -> None:
    served = cluster.kubectl("api-resources", f"--api-group={GROUP}", "-o", "name").stdout.split()
    for name in REQUIRED_CRDS:
        assert name in served


def test_kubectl_creates_and_reads_back_vm_and_vmi(cluster: Cluster, crds: list[str], namespace: str) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(_vm("vm-kubectl")))
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(_vmi("vmi-kubectl")))
    vm = cluster.kubectl_json("get", "virtualmachine", "vm-kubectl", "-n", namespace)
    vmi = cluster.kubectl_json("get", "vmi", "vmi-kubectl", "-n", namespace)
    assert vm["spec"]["runStrategy"] == "Halted"  # type: ignore[index]
    template_spec = vm["spec"]["template"]["spec"]  # type: ignore[index]
    assert template_spec["domain"]["resources"]["requests"]["memory"] == "128Mi"
    assert vmi["spec"]["volumes"][0]["containerDisk"]["image"] == "localhost/kubevirt/cirros:devel"  # type: ignore[index]
    assert vmi["metadata"]["uid"]  # type: ignore[index]


@pytest.fixture
def custom_objects(cluster: Cluster) -> Iterator[client.CustomObjectsApi]:
    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        yield client.CustomObjectsApi(api_client)
    finally:
        api_client.close()


def test_python_client_creates_and_reads_back_vm_and_vmi(
    crds: list[str], namespace: str, custom_objects: client.CustomObjectsApi
) -> None:
    custom_objects.create_namespaced_custom_object(
        GROUP, "v1", namespace, "virtualmachines", _vm("vm-python")
    )
    custom_objects.create_namespaced_custom_object(
        GROUP, "v1", namespace, "virtualmachineinstances", _vmi("vmi-python")
    )
    vm = custom_objects.get_namespaced_custom_object(GROUP, "v1", namespace, "virtualmachines", "vm-python")
    vmi = custom_objects.get_namespaced_custom_object(
        GROUP, "v1", namespace, "virtualmachineinstances", "vmi-python"
    )
    assert vm["kind"] == "VirtualMachine"
    assert vm["spec"]["template"]["metadata"]["labels"] == {"kubevirt.io/vm": "vm-python"}
    assert vmi["spec"]["domain"]["devices"]["disks"] == [{"name": "rootdisk", "disk": {"bus": "virtio"}}]
    listed = custom_objects.list_namespaced_custom_object(GROUP, "v1", namespace, "virtualmachineinstances")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["vmi-python"]
    # KubeVirt gives VirtualMachines a status subresource (virt-controller writes it there) and
    # VirtualMachineInstances none (virt-handler updates the whole object).
    vm["status"] = {"printableStatus": "Stopped"}
    custom_objects.replace_namespaced_custom_object_status(
        GROUP, "v1", namespace, "virtualmachines", "vm-python", vm
    )
    vmi["status"] = {"phase": "Pending"}
    custom_objects.replace_namespaced_custom_object(
        GROUP, "v1", namespace, "virtualmachineinstances", "vmi-python", vmi
    )
    vm = custom_objects.get_namespaced_custom_object(GROUP, "v1", namespace, "virtualmachines", "vm-python")
    vmi = custom_objects.get_namespaced_custom_object(
        GROUP, "v1", namespace, "virtualmachineinstances", "vmi-python"
    )
    assert vm["status"]["printableStatus"] == "Stopped"
    assert vmi["status"]["phase"] == "Pending"
