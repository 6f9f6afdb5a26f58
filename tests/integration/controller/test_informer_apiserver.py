"""Informers against a real kube-apiserver: list + watch, selectors, relisting after 410 Gone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCES, KubeClient
from kubevirt.controller import SharedInformerFactory, key_of
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_testing.waiting import eventually


def vmi(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "labels": labels},
        "spec": {"domain": {"devices": {}}},
    }


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def handlers(self) -> dict[str, Callable[..., None]]:
        return {
            "on_add": lambda obj: self.seen.append(("add", key_of(obj))),
            "on_update": lambda old, new: self.seen.append(("update", key_of(new))),
            "on_delete": lambda obj: self.seen.append(("delete", key_of(obj))),
        }


def test_adds_updates_and_deletes_reach_the_cache_as_models(kube: KubeClient, namespace: str) -> None:
    kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("before"))
    factory = SharedInformerFactory(kube, resync_seconds=0)
    informer = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, namespace=namespace)
    events = Events()
    informer.add_event_handler(**events.handlers())
    factory.start()
    try:
        assert factory.wait_for_cache_sync(15)
        assert events.seen == [("add", f"{namespace}/before")]
        created = kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("after"))
        kube.update(VIRTUAL_MACHINE_INSTANCES, namespace, {**created, "status": {"nodeName": "n1"}})
        kube.delete(VIRTUAL_MACHINE_INSTANCES, namespace, "before")
        eventually(lambda: len(events.seen) == 4)
        assert events.seen[1:] == [
            ("add", f"{namespace}/after"),
            ("update", f"{namespace}/after"),
            ("delete", f"{namespace}/before"),
        ]
        cached = informer.store.get_by_key(f"{namespace}/after")
        assert isinstance(cached, VirtualMachineInstance)
        assert [key_of(v) for v in informer.store.by_index("node", "n1")] == [f"{namespace}/after"]
        assert informer.store.get_by_key(f"{namespace}/before") is None
    finally:
        factory.stop()


def test_label_and_field_selectors_limit_what_is_cached(kube: KubeClient, namespace: str) -> None:
    kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("mine", owner="me"))
    kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("theirs", owner="them"))
    factory = SharedInformerFactory(kube, resync_seconds=0)
    labelled = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, label_selector="owner=me")
    named = factory.informer(PODS, namespace=namespace, field_selector="metadata.name=p2")
    factory.start()
    try:
        assert factory.wait_for_cache_sync(15)
        for name in ("p1", "p2"):
            kube.create(
                PODS,
                namespace,
                {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
            )
        kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("mine-too", owner="me"))
        kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("theirs-too", owner="them"))
        eventually(lambda: len(labelled.store.list()) == 2 and len(named.store.list()) == 1)
        assert sorted(labelled.store.list_keys()) == [f"{namespace}/mine", f"{namespace}/mine-too"]
        assert named.store.list_keys() == [f"{namespace}/p2"]
    finally:
        factory.stop()


class ExpiringOnce:
    """Passes calls to the real client but sends the first watch from a long-expired resourceVersion."""

    def __init__(self, kube: KubeClient, on_list: Callable[[], None]) -> None:
        self.kube = kube
        self.on_list = on_list
        self.watched: list[str] = []

    def list_raw(self, *args: Any, **kwargs: Any) -> bytes:
        raw = self.kube.list_raw(*args, **kwargs)
        self.on_list()
        return raw

    def watch(self, *args: Any, resource_version: str, **kwargs: Any) -> Any:
        version = "1" if not self.watched else resource_version
        self.watched.append(version)
        return self.kube.watch(*args, resource_version=version, **kwargs)


def test_an_expired_resource_version_relists_and_catches_up(kube: KubeClient, namespace: str) -> None:
    kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("first"))
    lists: list[int] = []

    def between_list_and_watch() -> None:
        lists.append(1)
        if len(lists) == 1:  # changes the first list missed: the relist must find them
            kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("second"))
            kube.delete(VIRTUAL_MACHINE_INSTANCES, namespace, "first")

    source = ExpiringOnce(kube, between_list_and_watch)
    factory = SharedInformerFactory(source, resync_seconds=0)
    informer = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance, namespace=namespace)
    events = Events()
    informer.add_event_handler(**events.handlers())
    factory.start()
    try:
        eventually(lambda: informer.lists == 2 and len(source.watched) == 2)
        assert source.watched[0] == "1"
        assert source.watched[1] == informer.last_resource_version or int(source.watched[1]) > 1
        assert informer.store.list_keys() == [f"{namespace}/second"]
        assert events.seen == [
            ("add", f"{namespace}/first"),
            ("add", f"{namespace}/second"),
            ("delete", f"{namespace}/first"),  # a tombstone: the watch never saw the deletion
        ]
    finally:
        factory.stop()
