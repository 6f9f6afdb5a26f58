"""Objects of kinds nobody here acts on (exports) get a Ready=False condition saying so, once."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import ConflictError
from kubevirt.client.resources import VIRTUAL_MACHINE_EXPORTS
from kubevirt.controller import Store, key_of
from kubevirt.virt_controller.watch.notactedon import (
    NOT_ACTED_ON_REASON,
    UNHANDLED_KINDS,
    NotActedOnController,
    Unhandled,
)
from kubevirt_testing.fake_kube_api import FakeKubeApi

JSON = dict[str, Any]


class RecordedEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.events.append((obj["metadata"]["name"], event_type, reason, message))


def controller_for(
    unhandled: Unhandled, api: FakeKubeApi, events: RecordedEvents
) -> tuple[NotActedOnController, Store[JSON]]:
    store: Store[JSON] = Store()
    queued: list[str] = []
    return (
        NotActedOnController(api=api, events=events, unhandled=unhandled, store=store, enqueue=queued.append),
        store,
    )


def export(name: str = "export") -> JSON:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"source": {"apiGroup": "", "kind": "PersistentVolumeClaim", "name": "claim"}},
    }


def test_every_unhandled_kind_is_one_kubevirt_serves() -> None:
    kinds = {u.resource.kind for u in UNHANDLED_KINDS}
    # Snapshots, their contents and restores have controllers of their own (watch/snapshot).
    assert kinds == {"VirtualMachineExport"}


def test_export_gets_a_ready_false_condition_once() -> None:
    api, events = FakeKubeApi(), RecordedEvents()
    controller, store = controller_for(Unhandled(VIRTUAL_MACHINE_EXPORTS), api, events)
    created = api.add(VIRTUAL_MACHINE_EXPORTS, export())
    store.upsert(created)
    controller.reconcile(key_of(created))

    [stored] = api.objects_of(VIRTUAL_MACHINE_EXPORTS)
    [condition] = stored["status"]["conditions"]
    assert condition["type"] == "Ready"
    assert condition["status"] == "False"
    assert condition["reason"] == NOT_ACTED_ON_REASON
    assert "does not act on VirtualMachineExport objects" in condition["message"]
    assert condition["lastTransitionTime"].endswith("Z")

    store.upsert(stored)
    writes = len(api.writes)
    controller.reconcile(key_of(stored))
    assert len(api.writes) == writes  # already marked: nothing written again


def test_an_existing_ready_condition_is_replaced_and_others_kept() -> None:
    api, events = FakeKubeApi(), RecordedEvents()
    controller, store = controller_for(Unhandled(VIRTUAL_MACHINE_EXPORTS), api, events)
    obj: JSON = {
        "metadata": {"name": "export", "namespace": "default"},
        "spec": {"source": {"apiGroup": "", "kind": "PersistentVolumeClaim", "name": "claim"}},
    }
    obj["status"] = {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "x"},
            {"type": "Progressing", "status": "False"},
        ]
    }
    created = api.add(VIRTUAL_MACHINE_EXPORTS, obj)
    store.upsert(created)
    controller.reconcile(key_of(created))
    [stored] = api.objects_of(VIRTUAL_MACHINE_EXPORTS)
    assert "does not act on VirtualMachineExport objects" in stored["status"]["conditions"][-1]["message"]
    assert [(c["type"], c["status"]) for c in stored["status"]["conditions"]] == [
        ("Progressing", "False"),
        ("Ready", "False"),
    ]


def test_a_stale_cache_conflicts_and_is_retried_by_the_queue() -> None:
    api, events = FakeKubeApi(), RecordedEvents()
    controller, store = controller_for(Unhandled(VIRTUAL_MACHINE_EXPORTS), api, events)
    created = api.add(VIRTUAL_MACHINE_EXPORTS, export())
    store.upsert(created)
    api.update(
        VIRTUAL_MACHINE_EXPORTS,
        "default",
        {**created, "metadata": {**created["metadata"], "labels": {"a": "b"}}},
    )
    with pytest.raises(ConflictError):
        controller.reconcile(key_of(created))


def test_deleted_or_deleting_objects_are_left_alone() -> None:
    api, events = FakeKubeApi(), RecordedEvents()
    controller, store = controller_for(Unhandled(VIRTUAL_MACHINE_EXPORTS), api, events)
    controller.reconcile("default/gone")
    obj = export()
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    store.upsert(obj)
    controller.reconcile(key_of(obj))
    assert api.writes == []
