"""The indexed cache, on plain dicts and on kubevirt_api models."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.controller import Store, key_of, split_key
from kubevirt_api.core.v1 import VirtualMachineInstance


def pod(name: str, node: str | None = None, owner: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": labels}
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "kind": "VirtualMachineInstance", "name": "x"}]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


def vmi(name: str, node: str | None = None) -> VirtualMachineInstance:
    return VirtualMachineInstance.from_dict(
        {
            "metadata": {"name": name, "namespace": "vms", "uid": f"uid-{name}"},
            "spec": {"domain": {"devices": {}}},
            "status": {"nodeName": node} if node else {},
        }
    )


def test_keys_of_dicts_models_and_cluster_scoped_objects() -> None:
    assert key_of(pod("a")) == "ns/a"
    assert key_of(vmi("v")) == "vms/v"
    assert key_of({"metadata": {"name": "node1"}}) == "node1"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("node1") == (None, "node1")
    with pytest.raises(ValueError, match="unexpected key format"):
        split_key("a/b/c")
    with pytest.raises(ValueError, match=r"metadata\.name"):
        key_of({"metadata": {}})


def test_indexes_follow_updates_and_deletes() -> None:
    store: Store[dict[str, Any]] = Store()
    store.upsert(pod("a", node="n1", owner="u1"))
    store.upsert(pod("b", node="n1"))
    assert sorted(key_of(p) for p in store.by_index("node", "n1")) == ["ns/a", "ns/b"]
    assert [key_of(p) for p in store.by_index("owner", "u1")] == ["ns/a"]
    old = store.upsert(pod("a", node="n2"))
    assert old is not None
    assert old["spec"]["nodeName"] == "n1"
    assert [key_of(p) for p in store.by_index("node", "n1")] == ["ns/b"]
    assert [key_of(p) for p in store.by_index("node", "n2")] == ["ns/a"]
    assert store.by_index("owner", "u1") == []
    assert store.remove("ns/b") is not None
    assert store.by_index("node", "n1") == []
    assert len(store.by_index("namespace", "ns")) == 1
    assert store.get_by_key("ns/b") is None


def test_vmis_are_indexed_by_status_node_name() -> None:
    store: Store[VirtualMachineInstance] = Store()
    store.upsert(vmi("v1", node="n1"))
    store.upsert(vmi("v2"))
    assert [key_of(v) for v in store.by_index("node", "n1")] == ["vms/v1"]
    assert len(store.by_index("namespace", "vms")) == 2


def test_label_indexes_are_built_on_first_use_and_then_maintained() -> None:
    store: Store[dict[str, Any]] = Store()
    store.upsert(pod("a", app="x"))
    assert [key_of(p) for p in store.by_index("label:app", "x")] == ["ns/a"]
    store.upsert(pod("b", app="x"))
    store.upsert(pod("a", app="y"))
    assert [key_of(p) for p in store.by_index("label:app", "x")] == ["ns/b"]
    with pytest.raises(KeyError, match="unknown index"):
        store.by_index("colour", "red")


def test_custom_indexers_and_replace() -> None:
    store: Store[dict[str, Any]] = Store({"name-length": lambda obj: [str(len(obj["metadata"]["name"]))]})
    store.upsert(pod("a"))
    previous = store.replace([pod("bb"), pod("cc")])
    assert list(previous) == ["ns/a"]
    assert store.by_index("name-length", "1") == []
    assert sorted(store.list_keys()) == ["ns/bb", "ns/cc"]
    assert len(store.by_index("name-length", "2")) == 2
