"""addvolume/removevolume against the real API server: through the aggregator with the HotplugVolumes gate
on (VMI and VM), and KubeVirt's JSON patches meeting a concurrent change, which the API server refuses with
the 422 virtctl retries."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from localcluster.apiserver import ApiServer

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES, ApiError, KubeClient, NotFoundError
from kubevirt.client.resources import KUBEVIRTS, PERSISTENT_VOLUME_CLAIMS, Resource
from kubevirt.virt_api.rest.status import StatusError
from kubevirt.virt_api.rest.volumes import VolumeHotplug
from kubevirt.virt_config import ClusterConfig
from kubevirt.virtctl.root import root
from kubevirt.virtctl.volumes import CONCURRENT_ERROR
from kubevirt_testing.aggregated import AggregatedVirtApi, create_vm, create_vmi

BASE = "/apis/subresources.kubevirt.io/v1"
KUBEVIRT_NAMESPACE = "kubevirt"
GATES_OFF = "Enable DeclarativeHotplugVolumes or HotplugVolumes feature gate to use this API."
ROOT = {"name": "root", "containerDisk": {"image": "img"}}
ADD = {
    "name": "data",
    "disk": {"name": "", "disk": {"bus": "scsi"}, "serial": "data"},
    "volumeSource": {"persistentVolumeClaim": {"claimName": "data", "hotpluggable": True}},
}
JSON = dict[str, Any]


def _gate_answer(kube: KubeClient) -> str:
    """What addvolume of a VM no namespace holds answers: the gate's refusal, or not found."""
    try:
        kube.request("PUT", f"{BASE}/namespaces/no-such-namespace/virtualmachines/vm/addvolume", body=ADD)
    except ApiError as err:
        return err.message
    return ""


def _wait_for(kube: KubeClient, gate_on: bool) -> None:
    deadline = time.monotonic() + 30
    while (_gate_answer(kube) == GATES_OFF) == gate_on:
        assert time.monotonic() < deadline, "virt-api did not follow the KubeVirt CR's feature gates"
        time.sleep(0.2)


@pytest.fixture
def hotplug_on(aggregated_virt_api: AggregatedVirtApi, kube: KubeClient) -> Iterator[None]:
    """The HotplugVolumes gate on in the KubeVirt CR virt-api follows; off again afterwards, as the rest of
    the session expects."""
    del aggregated_virt_api
    kubevirt = {
        "apiVersion": KUBEVIRTS.api_version,
        "kind": KUBEVIRTS.kind,
        "metadata": {"name": "kubevirt", "namespace": KUBEVIRT_NAMESPACE},
        "spec": {"configuration": {"developerConfiguration": {"featureGates": ["HotplugVolumes"]}}},
    }
    kube.create(KUBEVIRTS, KUBEVIRT_NAMESPACE, kubevirt)
    try:
        _wait_for(kube, gate_on=True)
        yield
    finally:
        # virt-api keeps the last configuration it read when the CR goes: the gate goes off first.
        gates_off = {"spec": {"configuration": {"developerConfiguration": {"featureGates": []}}}}
        kube.patch(KUBEVIRTS, KUBEVIRT_NAMESPACE, "kubevirt", gates_off, patch_type="merge")
        _wait_for(kube, gate_on=False)
        with contextlib.suppress(NotFoundError):
            kube.delete(KUBEVIRTS, KUBEVIRT_NAMESPACE, "kubevirt")


def _running_vmi(kube: KubeClient, namespace: str) -> JSON:
    return create_vmi(
        kube,
        namespace,
        "vm",
        {"phase": "Running"},
        domain={"devices": {"disks": [{"name": "root", "disk": {}}]}},
        volumes=[ROOT],
    )


def test_hotplug_into_a_vmi_and_out_again_through_the_aggregator(
    hotplug_on: None, kube: KubeClient, namespace: str
) -> None:
    _running_vmi(kube, namespace)
    path = f"{BASE}/namespaces/{namespace}/virtualmachineinstances/vm"
    kube.request("PUT", f"{path}/addvolume", body=ADD)
    spec = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vm")["spec"]
    assert spec["volumes"][-1] == {
        "name": "data",
        "persistentVolumeClaim": {"claimName": "data", "hotpluggable": True},
    }
    assert spec["domain"]["devices"]["disks"][-1] == {
        "name": "data",
        "disk": {"bus": "scsi"},
        "serial": "data",
    }
    with pytest.raises(ApiError) as again:
        kube.request("PUT", f"{path}/addvolume", body=ADD)
    assert (again.value.status, again.value.message) == (
        409,
        'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "vm": '
        "Unable to add volume [data] because volume with that name already exists",
    )
    kube.request("PUT", f"{path}/removevolume", body={"name": "data"})
    spec = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vm")["spec"]
    assert [volume["name"] for volume in spec["volumes"]] == ["root"]


def test_a_vm_request_lands_in_its_status(hotplug_on: None, kube: KubeClient, namespace: str) -> None:
    vm = create_vm(kube, namespace, "vm", "Always")
    vm["status"] = {"printableStatus": "Running"}  # as the VM controller leaves it
    kube.update_status(VIRTUAL_MACHINES, namespace, vm)
    path = f"{BASE}/namespaces/{namespace}/virtualmachines/vm"
    kube.request("PUT", f"{path}/addvolume", body={**ADD, "dryRun": ["All"]})
    assert "volumeRequests" not in kube.get(VIRTUAL_MACHINES, namespace, "vm")["status"]
    kube.request("PUT", f"{path}/addvolume", body=ADD)
    requests = kube.get(VIRTUAL_MACHINES, namespace, "vm")["status"]["volumeRequests"]
    assert requests == [{"addVolumeOptions": {**ADD, "disk": {**ADD["disk"], "name": "data"}}}]


class RacingClient:
    """The real API server, where someone else adds a volume to the VMI just before virt-api's patch."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        return self.kube.get(resource, namespace, name)

    def patch(self, resource: Resource, namespace: str | None, name: str, patch: Any, **kwargs: Any) -> JSON:
        current = self.kube.get(resource, namespace, name)
        current["spec"]["volumes"].append({"name": "other", "emptyDisk": {"capacity": "1Gi"}})
        self.kube.update(resource, namespace, current)
        return self.kube.patch(resource, namespace, name, patch, **kwargs)


def test_a_concurrent_change_is_refused_by_the_api_server_as_virtctl_expects(
    kube: KubeClient, namespace: str
) -> None:
    _running_vmi(kube, namespace)
    hotplug = VolumeHotplug(RacingClient(kube), lambda: ClusterConfig.build(feature_gates=["HotplugVolumes"]))  # type: ignore[arg-type]
    with pytest.raises(StatusError) as refused:
        hotplug.add(
            namespace,
            "vm",
            b'{"name": "data", "disk": {}, "volumeSource": {"dataVolume": {"name": "d"}}}',
            ephemeral=True,
        )
    assert (refused.value.code, refused.value.reason, refused.value.message) == (
        422,
        "Invalid",
        CONCURRENT_ERROR,
    )
    volumes = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vm")["spec"]["volumes"]
    assert [volume["name"] for volume in volumes] == ["root", "other"]


def test_virtctl_plugs_a_claim_into_a_vmi_and_takes_it_out(
    hotplug_on: None, apiserver: ApiServer, kube: KubeClient, namespace: str
) -> None:
    _running_vmi(kube, namespace)
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    kube.create(PERSISTENT_VOLUME_CLAIMS, namespace, claim)

    def virtctl(*args: str) -> Any:
        flags = ["--kubeconfig", str(apiserver.kubeconfig), "-n", namespace]
        return CliRunner().invoke(root, [*flags, *args], catch_exceptions=False)

    added = virtctl("addvolume", "vm", "--volume-name=data")
    assert (added.exit_code, added.stdout) == (
        0,
        "Successfully submitted add volume request to VM vm for volume data\n",
    )
    spec = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vm")["spec"]
    assert spec["volumes"][-1] == {"name": "data", **ADD["volumeSource"]}
    assert spec["domain"]["devices"]["disks"][-1] == {**ADD["disk"], "name": "data"}
    missing = virtctl("addvolume", "vm", "--volume-name=absent")
    assert (missing.exit_code, missing.stderr) == (
        1,
        "error adding volume, Volume absent is not a DataVolume or PersistentVolumeClaim\n",
    )
    removed = virtctl("removevolume", "vm", "--volume-name=data")
    assert removed.exit_code == 0, removed.output
    spec = kube.get(VIRTUAL_MACHINE_INSTANCES, namespace, "vm")["spec"]
    assert [volume["name"] for volume in spec["volumes"]] == ["root"]
