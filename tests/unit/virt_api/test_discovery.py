"""Discovery documents and the APIService objects of the subresource API."""

from __future__ import annotations

import base64

from kubevirt.apiservices import subresource_api_services
from kubevirt.virt_api.rest import discovery


def test_the_api_group_keeps_kubevirts_name_and_prefers_v1() -> None:
    group = discovery.api_group()
    assert group["name"] == "subresource.kubevirt.io"
    assert group["preferredVersion"] == {"groupVersion": "subresources.kubevirt.io/v1", "version": "v1"}
    assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha3"]


def test_resource_lists_name_every_subresource_per_version() -> None:
    listed = discovery.api_resource_list("v1alpha3")
    assert listed["groupVersion"] == "subresources.kubevirt.io/v1alpha3"
    names = [resource["name"] for resource in listed["resources"]]
    assert len(names) == 26
    assert names[0] == "expand-vm-spec"
    assert all(resource["namespaced"] for resource in listed["resources"])


def test_root_paths_and_openapi() -> None:
    assert discovery.root_paths()["paths"][:3] == ["/apis", "/openapi/v2", "/apis/subresources.kubevirt.io"]
    paths = discovery.openapi_v2()["paths"]
    start = "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/{name}/start"
    console = (
        "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachineinstances/{name}/console"
    )
    assert "put" in paths[start]
    assert "get" in paths[console]


def test_api_services_point_at_virt_api() -> None:
    services = subresource_api_services("kubevirt", b"PEM", port=8443)
    assert [s["metadata"]["name"] for s in services] == [
        "v1.subresources.kubevirt.io",
        "v1alpha3.subresources.kubevirt.io",
    ]
    spec = services[0]["spec"]
    assert spec["service"] == {"namespace": "kubevirt", "name": "virt-api", "port": 8443}
    assert (spec["groupPriorityMinimum"], spec["versionPriority"]) == (1000, 15)
    assert base64.b64decode(spec["caBundle"]) == b"PEM"
    assert services[0]["metadata"]["labels"] == {
        "kubevirt.io": "virt-api-aggregator",
        "app.kubernetes.io/managed-by": "virt-operator",
    }
    assert "caBundle" not in subresource_api_services("kubevirt")[1]["spec"]
