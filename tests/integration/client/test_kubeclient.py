"""KubeClient against a real kube-apiserver: reads, guarded writes, patches and the errors they raise."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import (
    PODS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    AlreadyExistsError,
    ConflictError,
    InvalidError,
    KubeClient,
    NotFoundError,
)


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def vmi(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name},
        "spec": {"domain": {"devices": {}}},
    }


def test_create_get_list_and_delete(kube: KubeClient, namespace: str) -> None:
    created = kube.create(PODS, namespace, pod("a", app="x"))
    kube.create(PODS, namespace, pod("b", app="y"))
    assert kube.get(PODS, namespace, "a")["metadata"]["uid"] == created["metadata"]["uid"]
    items, version = kube.list(PODS, namespace, label_selector="app=x")
    assert [item["metadata"]["name"] for item in items] == ["a"]
    assert items[0]["kind"] == "Pod"
    assert int(version) > 0
    items, _ = kube.list(PODS, namespace, field_selector="metadata.name=b")
    assert [item["metadata"]["name"] for item in items] == ["b"]
    with pytest.raises(AlreadyExistsError):
        kube.create(PODS, namespace, pod("a"))
    kube.delete(PODS, namespace, "a", grace_period_seconds=0)
    with pytest.raises(NotFoundError):
        kube.get(PODS, namespace, "a")


def test_stale_writes_raise_conflict(kube: KubeClient, namespace: str) -> None:
    created = kube.create(PODS, namespace, pod("a"))
    changed = {**created, "metadata": {**created["metadata"], "labels": {"v": "1"}}}
    updated = kube.update(PODS, namespace, changed)
    assert updated["metadata"]["labels"] == {"v": "1"}
    with pytest.raises(ConflictError) as stale:
        kube.update(PODS, namespace, created)  # the old resourceVersion
    assert stale.value.status == 409
    with pytest.raises(ConflictError):
        kube.delete(PODS, namespace, "a", uid="00000000-0000-0000-0000-000000000000")
    guarded = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": created["metadata"]["resourceVersion"]}
    ]
    with pytest.raises(InvalidError):
        kube.patch(
            PODS, namespace, "a", [*guarded, {"op": "add", "path": "/metadata/labels/w", "value": "2"}]
        )
    kube.delete(PODS, namespace, "a", uid=created["metadata"]["uid"], grace_period_seconds=0)


def test_patches_of_each_type(kube: KubeClient, namespace: str) -> None:
    kube.create(PODS, namespace, pod("a", app="x"))
    kube.patch(PODS, namespace, "a", [{"op": "add", "path": "/metadata/labels/tier", "value": "db"}])
    kube.patch(PODS, namespace, "a", {"metadata": {"labels": {"app": None}}}, patch_type="merge")
    patched = kube.patch(
        PODS, namespace, "a", {"metadata": {"annotations": {"k": "v"}}}, patch_type="strategic"
    )
    assert patched["metadata"]["labels"] == {"tier": "db"}
    assert patched["metadata"]["annotations"] == {"k": "v"}
    with pytest.raises(ValueError, match="patch_type"):
        kube.patch(PODS, namespace, "a", {}, patch_type="apply")


def test_custom_resources_and_the_status_subresource(kube: KubeClient, namespace: str) -> None:
    # VMIs have no status subresource (as in KubeVirt): their status is written with the object.
    created = kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("v"))
    updated = kube.update(
        VIRTUAL_MACHINE_INSTANCES, namespace, {**created, "status": {"phase": "Scheduling"}}
    )
    assert updated["status"] == {"phase": "Scheduling"}
    template = {"spec": {"domain": {"devices": {}}}}
    vm = kube.create(
        VIRTUAL_MACHINES,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "vm"},
            "spec": {"runStrategy": "Halted", "template": template},
        },
    )
    with_status = {**vm, "status": {"printableStatus": "Stopped"}}
    assert kube.update_status(VIRTUAL_MACHINES, namespace, with_status)["status"] == {
        "printableStatus": "Stopped"
    }
    patched = kube.patch(
        VIRTUAL_MACHINES,
        namespace,
        "vm",
        [{"op": "add", "path": "/status/ready", "value": False}],
        subresource="status",
    )
    assert patched["status"] == {"printableStatus": "Stopped", "ready": False}
    assert patched["spec"]["runStrategy"] == "Halted"
    with pytest.raises(InvalidError) as invalid:
        kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, {**vmi("w"), "spec": {"domain": "not an object"}})
    assert "spec.domain" in invalid.value.message
