"""Every KubeVirt kind is served by the real kube-apiserver, and objects of the kinds nobody here acts
on are marked so by virt-controller's not-acted-on controllers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kubevirt.client import EventRecorder, KubeClient, Resource
from kubevirt.client.resources import VIRTUAL_MACHINE_EXPORTS
from kubevirt.controller import Controller, RateLimitingQueue, SharedInformerFactory
from kubevirt.virt_controller.watch.notactedon import (
    NOT_ACTED_ON_REASON,
    UNHANDLED_KINDS,
    NotActedOnController,
)
from kubevirt_api.crd import CRDS
from kubevirt_testing.controller_threads import controller_threads
from kubevirt_testing.waiting import eventually

JSON = dict[str, Any]
SAMPLES: dict[Resource, JSON] = {
    VIRTUAL_MACHINE_EXPORTS: {
        "spec": {
            "source": {"apiGroup": "", "kind": "PersistentVolumeClaim", "name": "claim"},
            "ttlDuration": "1h",
        }
    },
}


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_every_kind_lists_empty_in_every_served_version(kube: KubeClient, namespace: str, kind: str) -> None:
    facts = CRDS[kind]
    served = [v["name"] for v in facts.versions if v["served"]]
    assert served
    for version in served:
        resource = Resource(facts.group, version, facts.plural, kind, namespaced=facts.namespaced)
        items, resource_version = kube.list(resource, namespace if facts.namespaced else None)
        if facts.namespaced:
            assert items == []
        assert resource_version


@pytest.fixture
def not_acted_on(kube: KubeClient, namespace: str) -> Iterator[None]:
    factory = SharedInformerFactory(kube, resync_seconds=0)
    events = EventRecorder(kube, "virt-controller", host="test")
    runners: list[Controller] = []
    for unhandled in UNHANDLED_KINDS:
        informer = factory.informer(
            unhandled.resource, namespace=namespace if unhandled.resource.namespaced else None
        )
        queue = RateLimitingQueue(unhandled.resource.plural)
        controller = NotActedOnController(
            api=kube, events=events, unhandled=unhandled, store=informer.store, enqueue=queue.add
        )
        informer.add_event_handler(controller.on_add, controller.on_update, controller.on_delete)
        runners.append(Controller(unhandled.resource.plural, queue, controller, workers=1))
    factory.start()
    assert factory.wait_for_cache_sync(15)
    try:
        with controller_threads(*runners):
            yield
    finally:
        events.stop()
        factory.stop()


def _ready_reason(obj: JSON) -> str | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready" and condition["status"] == "False":
            return str(condition.get("reason"))
    return None


def test_objects_of_unhandled_kinds_are_told_they_are_not_acted_on(
    kube: KubeClient, namespace: str, not_acted_on: None
) -> None:
    assert set(SAMPLES) == {u.resource for u in UNHANDLED_KINDS}
    for resource, sample in SAMPLES.items():
        kube.create(
            resource,
            namespace,
            {
                "apiVersion": resource.api_version,
                "kind": resource.kind,
                **sample,
                "metadata": {"name": "sample"},
            },
        )

    for resource in SAMPLES:
        eventually(
            lambda r=resource: _ready_reason(kube.get(r, namespace, "sample")) == NOT_ACTED_ON_REASON,  # type: ignore[misc]
            timeout=10,
        )
        condition = next(c for c in kube.get(resource, namespace, "sample")["status"]["conditions"])
        assert resource.kind in condition["message"]
