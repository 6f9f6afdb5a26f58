"""Informers against a scripted list/watch source: events, relists, tombstones, decoding, sharing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCES, GoneError
from kubevirt.controller import Informer, SharedInformerFactory, key_of
from kubevirt_api.core.v1 import VirtualMachineInstance

JSON = dict[str, Any]


def pod(name: str, version: str, node: str = "") -> JSON:
    return {
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": version, "uid": f"uid-{name}"},
        "spec": {"nodeName": node} if node else {},
    }


def vmi(name: str, version: str) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": version},
        "spec": {"domain": {"devices": {}}},
    }


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, ...]] = []

    def add(self, obj: Any) -> None:
        self.events.append(("add", key_of(obj)))

    def update(self, old: Any, new: Any) -> None:
        self.events.append(("update", key_of(old), _version(old), _version(new)))

    def delete(self, obj: Any) -> None:
        self.events.append(("delete", key_of(obj), _version(obj)))


def _version(obj: Any) -> str:
    if isinstance(obj, dict):
        return str(obj["metadata"]["resourceVersion"])
    return str(obj.metadata.resource_version)


@pytest.fixture
def factory(source: Any) -> Iterator[SharedInformerFactory]:
    made = SharedInformerFactory(source, resync_seconds=0)
    yield made
    made.stop()


def test_list_then_watch_events_reach_the_store_and_handlers(
    source: Any, factory: SharedInformerFactory, eventually: Callable[..., None]
) -> None:
    informer = factory.informer(PODS)
    recorder = Recorder()
    informer.add_event_handler(recorder.add, recorder.update, recorder.delete)
    source.lists.put(([pod("a", "1", node="n1")], "10"))
    factory.start()
    assert factory.wait_for_cache_sync(5)
    watch = source.next_watch()
    assert source.watched_versions == ["10"]
    watch.send("ADDED", pod("b", "11"))
    watch.send("MODIFIED", pod("a", "12", node="n2"))
    watch.send("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "15"}})
    watch.send("DELETED", pod("b", "16"))
    eventually(lambda: len(recorder.events) == 4)
    assert recorder.events == [
        ("add", "ns/a"),
        ("add", "ns/b"),
        ("update", "ns/a", "1", "12"),
        ("delete", "ns/b", "16"),
    ]
    assert [key_of(p) for p in informer.store.by_index("node", "n2")] == ["ns/a"]
    assert informer.store.get_by_key("ns/b") is None
    cached = informer.store.get_by_key("ns/a")
    assert cached is not None
    assert cached["kind"] == "Pod"  # list items get their type filled in
    assert informer.last_resource_version == "16"


def test_a_watch_the_server_ends_resumes_from_the_last_version(
    source: Any, factory: SharedInformerFactory
) -> None:
    factory.informer(PODS)
    source.lists.put(([], "10"))
    factory.start()
    watch = source.next_watch()
    watch.send("BOOKMARK", {"metadata": {"resourceVersion": "20"}})
    watch.end()
    source.next_watch()
    assert source.watched_versions == ["10", "20"]
    assert source.list_calls == [(None, None, None)]  # no relist


def test_410_gone_relists_and_reports_what_vanished_as_deleted(
    source: Any, factory: SharedInformerFactory
) -> None:
    informer = factory.informer(PODS)
    recorder = Recorder()
    informer.add_event_handler(recorder.add, recorder.update, recorder.delete)
    source.lists.put(([pod("a", "1"), pod("b", "2")], "10"))
    factory.start()
    watch = source.next_watch()
    source.lists.put(([pod("a", "5"), pod("c", "6")], "30"))
    watch.send("ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    source.next_watch()
    assert source.watched_versions == ["10", "30"]
    assert informer.lists == 2
    assert sorted(recorder.events[2:]) == [
        ("add", "ns/c"),
        ("delete", "ns/b", "2"),  # the tombstone carries the last known object
        ("update", "ns/a", "1", "5"),
    ]
    assert sorted(informer.store.list_keys()) == ["ns/a", "ns/c"]


def test_lists_ask_the_watch_cache_first_then_the_last_version_then_a_consistent_read(
    source: Any, factory: SharedInformerFactory
) -> None:
    factory.informer(PODS)
    source.lists.put(([], "10"))
    factory.start()
    source.next_watch().send("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"})
    source.lists.put(GoneError(410, "Expired", "too old resource version: 10 (50)"))
    source.lists.put(([], "60"))
    source.next_watch()
    assert source.list_versions == ["0", "10", None]
    assert source.watched_versions == ["10", "60"]


def test_kubevirt_kinds_are_cached_as_models_and_bad_objects_are_left_out(
    source: Any, factory: SharedInformerFactory, eventually: Callable[..., None]
) -> None:
    informer = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance)
    bad = vmi("bad", "3")
    bad["spec"]["domain"]["devices"] = "not an object"
    source.lists.put(([vmi("v1", "1"), bad], "10"))
    factory.start()
    watch = source.next_watch()
    assert informer.store.list_keys() == ["ns/v1"]
    assert isinstance(informer.store.get_by_key("ns/v1"), VirtualMachineInstance)
    watch.send("ADDED", vmi("v2", "11"))
    watch.send("ADDED", bad)
    eventually(lambda: informer.last_resource_version == "3")
    assert sorted(informer.store.list_keys()) == ["ns/v1", "ns/v2"]


def test_a_handler_added_after_sync_is_told_about_cached_objects(
    source: Any, factory: SharedInformerFactory
) -> None:
    informer = factory.informer(PODS)
    source.lists.put(([pod("a", "1")], "10"))
    factory.start()
    assert factory.wait_for_cache_sync(5)
    recorder = Recorder()
    informer.add_event_handler(recorder.add)
    assert recorder.events == [("add", "ns/a")]


def test_a_failing_handler_does_not_stop_the_others(source: Any, factory: SharedInformerFactory) -> None:
    informer = factory.informer(PODS)
    recorder = Recorder()

    def broken(obj: Any) -> None:
        raise RuntimeError("boom")

    informer.add_event_handler(broken)
    informer.add_event_handler(recorder.add)
    source.lists.put(([pod("a", "1")], "10"))
    factory.start()
    assert factory.wait_for_cache_sync(5)
    assert recorder.events == [("add", "ns/a")]


def test_resync_reports_every_cached_object_as_updated(source: Any, eventually: Callable[..., None]) -> None:
    informer: Informer[Any] = SharedInformerFactory(source, resync_seconds=0.05).informer(PODS)
    recorder = Recorder()
    informer.add_event_handler(on_update=recorder.update)
    source.lists.put(([pod("a", "1")], "10"))
    informer.start()
    try:
        eventually(lambda: len(recorder.events) >= 2)
        assert recorder.events[0] == ("update", "ns/a", "1", "1")
    finally:
        informer.stop()


def test_the_same_arguments_share_one_informer(source: Any, factory: SharedInformerFactory) -> None:
    first = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance)
    assert factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance.from_dict) is first
    assert (
        factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, label_selector="a=b") is not first
    )
    assert factory.informer(PODS) is factory.informer(PODS, None)
    with_index = factory.informer(
        PODS, indexers={"phase": lambda obj: [obj.get("status", {}).get("phase", "")]}
    )
    assert with_index.store.by_index("phase", "Running") == []


def test_selectors_and_namespace_are_passed_to_the_list(source: Any, factory: SharedInformerFactory) -> None:
    factory.informer(
        PODS, namespace="ns", label_selector="kubevirt.io=virt-launcher", field_selector="spec.nodeName=n1"
    )
    source.lists.put(([], "1"))
    factory.start()
    source.next_watch()
    assert source.list_calls == [("ns", "kubevirt.io=virt-launcher", "spec.nodeName=n1")]
