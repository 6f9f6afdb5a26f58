"""virt-api's presets come from an informer's cache: a LIST only until that cache's first list has landed."""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Iterator
from typing import Any, cast

import pytest

from kubevirt.client import KubeClient
from kubevirt.client.errors import ConnectionFailedError
from kubevirt.virt_api.cluster import KubernetesClusterState
from kubevirt.virt_api.presets import PresetCache
from kubevirt_testing.listwatch import FakeListWatcher
from kubevirt_testing.vmi_mutation import mutate_vmi_create
from kubevirt_testing.waiting import eventually

JSON = dict[str, Any]


def preset(name: str, namespace: str = "ns", cores: int = 2, version: str = "1") -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstancePreset",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": version},
        "spec": {"selector": {"matchLabels": {"flavor": name}}, "domain": {"cpu": {"cores": cores}}},
    }


def names(presets: list[JSON] | None) -> list[str] | None:
    return None if presets is None else [p["metadata"]["name"] for p in presets]


class ServerLists:
    """Stands in for virt-api's client: answers preset LISTs and counts them."""

    PATH = re.compile(r"/apis/kubevirt\.io/v1/namespaces/([^/]+)/virtualmachineinstancepresets")

    def __init__(self, items: list[JSON]) -> None:
        self.items = items
        self.calls: list[str] = []

    def request(self, method: str, path: str, **_: Any) -> bytes:
        found = self.PATH.fullmatch(path)
        assert method == "GET"
        assert found is not None, path
        namespace = found.group(1)
        self.calls.append(namespace)
        items = [item for item in self.items if item["metadata"]["namespace"] == namespace]
        return json.dumps({"items": items}).encode()


@pytest.fixture
def source() -> FakeListWatcher:
    return FakeListWatcher()


@pytest.fixture
def cache(source: FakeListWatcher) -> Iterator[PresetCache]:
    presets = PresetCache(source)
    yield presets
    presets.stop()


def state_with(cache: PresetCache, server: ServerLists) -> KubernetesClusterState:
    return KubernetesClusterState(cast(KubeClient, server), cache)


def test_the_cache_lists_every_namespace_once_and_follows_the_watch(
    source: FakeListWatcher, cache: PresetCache
) -> None:
    cache.start()
    assert cache.in_namespace("ns") is None  # nothing listed yet: no answer rather than "no presets"
    source.lists.put(([preset("b"), preset("a"), preset("c", namespace="other")], "10"))
    eventually(cache.has_synced, timeout=5)
    assert source.list_calls == [(None, None, None)]  # all namespaces, no selectors
    assert names(cache.in_namespace("ns")) == ["a", "b"]  # in name order, as a LIST answers
    assert names(cache.in_namespace("other")) == ["c"]
    assert cache.in_namespace("empty") == []

    watch = source.next_watch()
    watch.send("ADDED", preset("aa", version="11"))
    watch.send("DELETED", preset("a", version="12"))
    watch.send("MODIFIED", preset("b", cores=4, version="13"))
    eventually(lambda: names(cache.in_namespace("ns")) == ["aa", "b"], timeout=5)
    found = cache.in_namespace("ns") or []
    assert found[1]["spec"]["domain"]["cpu"]["cores"] == 4

    # The server ends the watch: the informer watches again from the last version, without a list.
    watch.end()
    again = source.next_watch()
    assert source.watched_versions[-1] == "13"
    again.send("ADDED", preset("z", version="14"))
    eventually(lambda: names(cache.in_namespace("ns")) == ["aa", "b", "z"], timeout=5)
    assert len(source.list_calls) == 1


def test_reviews_list_from_the_server_until_the_cache_has_synced_then_never(
    source: FakeListWatcher, cache: PresetCache
) -> None:
    server = ServerLists([preset("small")])
    state = state_with(cache, server)
    # The informer's first list fails (the API server is down): reviews still see the stored presets.
    source.lists.put(ConnectionFailedError("GET presets: refused"))
    cache.start()
    eventually(lambda: len(source.list_calls) == 1, timeout=5)
    assert names(state.list_vmi_presets("ns")) == ["small"]
    assert server.calls == ["ns"]

    source.lists.put(([preset("small")], "20"))  # the informer's retry, after its backoff
    eventually(cache.has_synced, timeout=5)
    for _ in range(5):
        assert names(state.list_vmi_presets("ns")) == ["small"]
    assert server.calls == ["ns"]  # no LIST once synced


def mutate(state: KubernetesClusterState, labels: dict[str, str]) -> JSON:
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "v", "namespace": "ns", "labels": labels},
        "spec": {"domain": {"memory": {"guest": "128Mi"}, "devices": {}}},
    }
    answer = mutate_vmi_create(state, vmi)
    assert answer["allowed"] is True, answer
    return {op["path"]: op["value"] for op in json.loads(base64.b64decode(answer["patch"]))}


def test_the_mutating_webhook_applies_a_preset_the_watch_brought_and_leaves_the_cache_unchanged(
    source: FakeListWatcher, cache: PresetCache
) -> None:
    server = ServerLists([])
    state = state_with(cache, server)
    source.lists.put(([], "30"))
    cache.start()
    eventually(cache.has_synced, timeout=5)
    source.next_watch().send("ADDED", preset("small", cores=3, version="31"))
    eventually(lambda: cache.in_namespace("ns") != [], timeout=5)
    cached = copy.deepcopy(cache.in_namespace("ns"))

    patch = mutate(state, {"flavor": "small"})
    assert patch["/spec"]["domain"]["cpu"]["cores"] == 3
    assert patch["/metadata"]["annotations"]["virtualmachinepreset.kubevirt.io/small"] == "kubevirt.io/v1"
    # Defaulting the merged VMI must not reach into the preset every review shares.
    assert cache.in_namespace("ns") == cached
    assert server.calls == []
