"""virt-api's cluster state on its one client: the paths each lookup reads, and how failures read."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from kubevirt.admission.state import ClusterStateError
from kubevirt.client import KubeClient
from kubevirt.client.errors import ApiError, ConnectionFailedError, error_from_response
from kubevirt.virt_api.cluster import REQUEST_TIMEOUT, KubernetesClusterState

JSON = dict[str, Any]


class Client:
    """Answers by path; a path without an answer is a 404. Records what each request asked for."""

    def __init__(self, answers: dict[str, JSON | ApiError]) -> None:
        self.answers = answers
        self.requests: list[JSON] = []

    def request(self, method: str, path: str, **kwargs: Any) -> bytes:
        self.requests.append({"method": method, "path": path, **kwargs})
        answer = self.answers.get(path)
        if answer is None:
            raise error_from_response(404, {"reason": "NotFound", "message": "not found"})
        if isinstance(answer, ApiError):
            raise answer
        return json.dumps(answer).encode()


def state(answers: dict[str, JSON | ApiError] | None = None) -> tuple[KubernetesClusterState, Client]:
    client = Client(answers or {})
    return KubernetesClusterState(cast(KubeClient, client)), client


@pytest.mark.parametrize(
    ("read", "path"),
    [
        (lambda s: s.get_pod("ns", "p"), "/api/v1/namespaces/ns/pods/p"),
        (lambda s: s.get_vmi("ns", "v"), "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstances/v"),
        (
            lambda s: s.get_controller_revision("ns", "r"),
            "/apis/apps/v1/namespaces/ns/controllerrevisions/r",
        ),
        (
            lambda s: s.get_instancetype_object("VirtualMachineClusterInstancetype", "ns", "u1"),
            "/apis/instancetype.kubevirt.io/v1beta1/virtualmachineclusterinstancetypes/u1",
        ),
        (
            lambda s: s.get_instancetype_object("VirtualMachinePreference", "ns", "p"),
            "/apis/instancetype.kubevirt.io/v1beta1/namespaces/ns/virtualmachinepreferences/p",
        ),
        (
            lambda s: s.get_volume_source("PersistentVolumeClaim", "ns", "d"),
            "/api/v1/namespaces/ns/persistentvolumeclaims/d",
        ),
        (
            lambda s: s.get_volume_source("DataVolume", "ns", "d"),
            "/apis/cdi.kubevirt.io/v1beta1/namespaces/ns/datavolumes/d",
        ),
        (
            lambda s: s.get_volume_source("DataSource", "ns", "d"),
            "/apis/cdi.kubevirt.io/v1beta1/namespaces/ns/datasources/d",
        ),
        (lambda s: s.get_vm("ns", "v"), "/apis/kubevirt.io/v1/namespaces/ns/virtualmachines/v"),
        (
            lambda s: s.get_vm_snapshot("ns", "s"),
            "/apis/snapshot.kubevirt.io/v1beta1/namespaces/ns/virtualmachinesnapshots/s",
        ),
        (
            lambda s: s.get_vm_snapshot_content("ns", "c"),
            "/apis/snapshot.kubevirt.io/v1beta1/namespaces/ns/virtualmachinesnapshotcontents/c",
        ),
    ],
)
def test_each_lookup_reads_its_object_once_within_the_review_deadline(read: Any, path: str) -> None:
    found = {"metadata": {"name": "x"}}
    cluster, client = state({path: found})
    assert read(cluster) == found
    assert client.requests == [{"method": "GET", "path": path, "timeout": REQUEST_TIMEOUT, "retry": False}]
    # An object the API server does not have is no object, not a failure.
    assert read(state()[0]) is None


def test_lists_carry_the_selector_and_keep_only_objects() -> None:
    path = "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstancemigrations"
    cluster, client = state({path: {"items": [{"metadata": {"name": "m"}}, "junk"]}})
    assert cluster.list_migrations("ns", "vm1") == [{"metadata": {"name": "m"}}]
    assert client.requests[0]["query"] == {"labelSelector": "kubevirt.io/vmi-name in (vm1)"}


def test_restores_are_listed_in_their_namespace() -> None:
    path = "/apis/snapshot.kubevirt.io/v1beta1/namespaces/ns/virtualmachinerestores"
    cluster, client = state({path: {"items": [{"metadata": {"name": "r"}}]}})
    assert cluster.list_vm_restores("ns") == [{"metadata": {"name": "r"}}]
    assert client.requests[0]["path"] == path
    with pytest.raises(ClusterStateError, match=r"^cannot read VirtualMachineRestores of other: 404"):
        cluster.list_vm_restores("other")


def test_kubevirts_are_listed_in_the_namespace_or_everywhere() -> None:
    kubevirt = {"metadata": {"name": "kubevirt", "namespace": "kubevirt"}}
    cluster, _ = state(
        {
            "/apis/kubevirt.io/v1/namespaces/kubevirt/kubevirts": {"items": [kubevirt]},
            "/apis/kubevirt.io/v1/kubevirts": {"items": [kubevirt, kubevirt]},
        }
    )
    assert cluster.list_kubevirts("kubevirt") == [kubevirt]
    assert cluster.list_kubevirts(None) == [kubevirt, kubevirt]
    # A list that is not there (no CRD) is a failure the follower logs, not "no KubeVirt".
    with pytest.raises(ClusterStateError, match="cannot read the KubeVirt configuration: 404 NotFound"):
        cluster.list_kubevirts("elsewhere")


def test_failures_name_what_was_read_and_why() -> None:
    pod = "/api/v1/namespaces/ns/pods/p"
    vmi = "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstances/v"
    cluster, client = state(
        {
            pod: error_from_response(403, {"reason": "Forbidden", "message": "no"}),
            vmi: ConnectionFailedError(f"PATCH {vmi}: connection refused"),
        }
    )
    with pytest.raises(ClusterStateError, match=r"^cannot read pod ns/p: 403 Forbidden: no$"):
        cluster.get_pod("ns", "p")
    with pytest.raises(ClusterStateError, match=r"\(patch\): PATCH .*: connection refused$"):
        cluster.patch_vmi("ns", "v", [{"op": "add", "path": "/metadata/labels", "value": {}}])
    assert client.requests[-1]["content_type"] == "application/json-patch+json"
