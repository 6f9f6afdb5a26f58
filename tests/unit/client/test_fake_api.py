"""The in-memory API keeps the write rules reconcilers depend on."""

from __future__ import annotations

import pytest

from kubevirt.client import PODS, AlreadyExistsError, ConflictError, InvalidError, NotFoundError
from kubevirt_testing.fake_kube_api import FakeKubeApi


def pod(name: str, **labels: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels}, "spec": {"containers": []}}


def test_stale_updates_and_uid_preconditions_conflict() -> None:
    api = FakeKubeApi()
    created = api.create(PODS, "ns", pod("a"))
    updated = api.update(PODS, "ns", {**created, "spec": {"nodeName": "n1"}})
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    with pytest.raises(ConflictError):
        api.update(PODS, "ns", created)
    with pytest.raises(ConflictError):
        api.delete(PODS, "ns", "a", uid="another-uid")
    api.delete(PODS, "ns", "a", uid=created["metadata"]["uid"])
    with pytest.raises(NotFoundError):
        api.get(PODS, "ns", "a")
    assert [verb for verb, *_ in api.writes] == ["create", "update", "delete"]


def test_names_generate_and_collide() -> None:
    api = FakeKubeApi()
    generated = api.create(PODS, "ns", {"metadata": {"generateName": "virt-launcher-vm-"}})
    assert generated["metadata"]["name"].startswith("virt-launcher-vm-")
    api.create(PODS, "ns", pod("a"))
    with pytest.raises(AlreadyExistsError):
        api.create(PODS, "ns", pod("a"))


def test_status_updates_change_only_the_status() -> None:
    api = FakeKubeApi()
    created = api.create(PODS, "ns", pod("a"))
    api.update_status(
        PODS, "ns", {**created, "spec": {"nodeName": "ignored"}, "status": {"phase": "Running"}}
    )
    stored = api.get(PODS, "ns", "a")
    assert stored["status"] == {"phase": "Running"}
    assert stored["spec"] == {"containers": []}


def test_json_and_merge_patches() -> None:
    api = FakeKubeApi()
    api.create(PODS, "ns", pod("a", app="x"))
    api.patch(PODS, "ns", "a", [{"op": "add", "path": "/metadata/labels/tier", "value": "db"}])
    api.patch(PODS, "ns", "a", {"metadata": {"labels": {"app": None}}}, patch_type="merge")
    assert api.get(PODS, "ns", "a")["metadata"]["labels"] == {"tier": "db"}
    with pytest.raises(InvalidError, match="test failed"):
        api.patch(PODS, "ns", "a", [{"op": "test", "path": "/metadata/labels/tier", "value": "web"}])


def test_label_selectors() -> None:
    api = FakeKubeApi()
    api.create(PODS, "ns", pod("a", app="x", tier="db"))
    api.create(PODS, "ns", pod("b", app="y"))

    def names(selector: str) -> list[str]:
        return sorted(p["metadata"]["name"] for p in api.list(PODS, "ns", label_selector=selector)[0])

    assert names("app=x") == ["a"]
    assert names("app in (x,y),!tier") == ["b"]
    assert names("app!=x") == ["b"]
    assert names("tier") == ["a"]
    assert names("app notin (x)") == ["b"]
