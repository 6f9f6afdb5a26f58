"""virt-operator installs the project's DataVolume importer under the DataImporter gate, against a real
kube-apiserver and with only the RBAC its manifest grants it: nothing while CDI's own CRDs are there, then
CDI's names, the CDI object once, the controller removed with the gate, and the CRDs holding the users'
DataVolumes kept on uninstall. The tests run in order against one install."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kubevirt.client import KUBEVIRTS, KubeClient
from kubevirt.client.resources import (
    CDIS,
    CLUSTER_ROLES,
    CUSTOM_RESOURCE_DEFINITIONS,
    DATA_VOLUMES,
    DEPLOYMENTS,
    MUTATING_WEBHOOKS,
    NAMESPACES,
    SERVICE_ACCOUNTS,
)
from kubevirt.virt_operator.app import VirtOperator
from kubevirt.virt_operator.resource import cdi
from kubevirt_api.cdi.crds import cdi_custom_resource_definition
from kubevirt_testing.operator import (
    NS,
    condition,
    create_kubevirt,
    eventually,
    find,
    kubevirt,
    phase,
    play_controller_manager,
    running_operator,
)

pytestmark = pytest.mark.integration

JSON = dict[str, Any]
GATE = "DataImporter"
FOREIGN = "cdiconfigs.cdi.kubevirt.io"


def _gates(*gates: str) -> JSON:
    return {"spec": {"configuration": {"developerConfiguration": {"featureGates": list(gates)}}}}


def _controller(kube: KubeClient) -> JSON | None:
    return find(kube, DEPLOYMENTS, "cdi", "cdi-deployment")


def _established(kube: KubeClient, name: str) -> bool:
    crd = find(kube, CUSTOM_RESOURCE_DEFINITIONS, None, name) or {}
    return any(
        c["type"] == "Established" and c["status"] == "True"
        for c in (crd.get("status") or {}).get("conditions") or []
    )


@pytest.fixture(scope="module")
def operator(operator_kube: KubeClient) -> Iterator[VirtOperator]:
    with running_operator(operator_kube) as running:
        yield running


def test_with_cdis_own_crd_nothing_is_installed_until_it_goes(
    kube: KubeClient, operator: VirtOperator
) -> None:
    foreign = cdi_custom_resource_definition("CDIConfig")
    foreign["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "cdi-operator"}
    kube.create(CUSTOM_RESOURCE_DEFINITIONS, None, foreign)
    create_kubevirt(kube, spec=_gates(GATE)["spec"])
    eventually(
        "every object is created", lambda: condition(kubevirt(kube), "Created").get("status") == "True"
    )
    assert _controller(kube) is None
    assert find(kube, NAMESPACES, None, "cdi") is None
    assert find(kube, CUSTOM_RESOURCE_DEFINITIONS, None, "datavolumes.cdi.kubevirt.io") is None

    kube.delete(CUSTOM_RESOURCE_DEFINITIONS, None, FOREIGN)
    eventually("the importer is installed", lambda: _controller(kube) is not None, timeout=60)


def test_the_importer_is_installed_with_cdis_names(kube: KubeClient, operator: VirtOperator) -> None:
    for name in cdi.crd_names():
        eventually(f"{name} is established", lambda name=name: _established(kube, name))
    assert find(kube, SERVICE_ACCOUNTS, "cdi", "cdi-sa") is not None
    for role in ("cdi", "cdi.kubevirt.io:admin", "cdi.kubevirt.io:view", "cdi.kubevirt.io:config-reader"):
        assert find(kube, CLUSTER_ROLES, None, role) is not None, role
    eventually("the CDI object is made", lambda: find(kube, CDIS, None, "cdi") is not None)
    made = kube.get(CDIS, None, "cdi")
    assert made["spec"]["config"]["featureGates"] == ["HonorWaitForFirstConsumer"]
    controller = _controller(kube)
    assert controller is not None
    (container,) = controller["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.test/kubevirt/cdi-controller:v1"
    assert container["args"][:2] == ["--importer-image", "registry.test/kubevirt/cdi-importer:v1"]

    play_controller_manager(kube)
    eventually("still deploying: the importer's controller is not ready", lambda: phase(kube) == "Deploying")
    for deployment in ("cdi-deployment", "cdi-apiserver", "cdi-uploadproxy"):
        eventually(f"{deployment} made", lambda d=deployment: find(kube, DEPLOYMENTS, "cdi", d) is not None)
        status = {
            "observedGeneration": kube.get(DEPLOYMENTS, "cdi", deployment)["metadata"]["generation"],
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "availableReplicas": 1,
        }
        kube.patch(
            DEPLOYMENTS, "cdi", deployment, {"status": status}, patch_type="merge", subresource="status"
        )
    eventually("Deployed", lambda: phase(kube) == "Deployed")


def test_a_users_edit_of_the_cdi_object_stays(kube: KubeClient, operator: VirtOperator) -> None:
    edit = {"spec": {"config": {"insecureRegistries": ["registry.test:5000"]}}}
    kube.patch(CDIS, None, "cdi", edit, patch_type="merge")
    kube.patch(KUBEVIRTS, NS, "kubevirt", {"metadata": {"labels": {"touched": "yes"}}}, patch_type="merge")
    eventually("the operator synced again", lambda: phase(kube) == "Deployed")
    assert kube.get(CDIS, None, "cdi")["spec"]["config"]["insecureRegistries"] == ["registry.test:5000"]


def test_turning_the_gate_off_removes_only_the_controller(kube: KubeClient, operator: VirtOperator) -> None:
    disk = {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "metadata": {"name": "disk"},
        "spec": {"source": {"blank": {}}, "storage": {"resources": {"requests": {"storage": "1Mi"}}}},
    }
    webhook = "cdi-api-datavolume-mutate"
    assert find(kube, MUTATING_WEBHOOKS, None, webhook) is not None
    kube.patch(KUBEVIRTS, NS, "kubevirt", _gates(), patch_type="merge")
    eventually("the controller is removed", lambda: _controller(kube) is None)
    # CDI's DataVolume webhook goes with cdi-apiserver: no pod answers it here, and it fails closed.
    eventually("the DataVolume webhook removed", lambda: find(kube, MUTATING_WEBHOOKS, None, webhook) is None)
    kube.create(DATA_VOLUMES, "default", disk)
    eventually("its ClusterRole too", lambda: find(kube, CLUSTER_ROLES, None, "cdi") is None)
    for deployment in ("cdi-apiserver", "cdi-uploadproxy"):
        eventually(f"{deployment} removed", lambda d=deployment: find(kube, DEPLOYMENTS, "cdi", d) is None)
    assert all(_established(kube, name) for name in cdi.crd_names())
    assert find(kube, CLUSTER_ROLES, None, "cdi.kubevirt.io:edit") is not None
    assert find(kube, DATA_VOLUMES, "default", "disk") is not None


def test_uninstalling_keeps_the_importers_crds_and_the_users_data_volumes(
    kube: KubeClient, operator: VirtOperator
) -> None:
    kube.patch(KUBEVIRTS, NS, "kubevirt", _gates(GATE), patch_type="merge")
    eventually("the controller is back", lambda: _controller(kube) is not None)
    kube.delete(KUBEVIRTS, NS, "kubevirt")
    eventually("the KubeVirt CR is gone", lambda: kubevirt(kube) is None, timeout=60)
    assert _controller(kube) is None
    assert find(kube, DEPLOYMENTS, NS, "virt-api") is None
    assert find(kube, CUSTOM_RESOURCE_DEFINITIONS, None, "virtualmachines.kubevirt.io") is None
    assert all(_established(kube, name) for name in cdi.crd_names())
    assert find(kube, DATA_VOLUMES, "default", "disk") is not None
    assert find(kube, NAMESPACES, None, "cdi") is not None
    # The user roles go with the rest of the installation's RBAC.
    assert find(kube, CLUSTER_ROLES, None, "cdi.kubevirt.io:view") is None
