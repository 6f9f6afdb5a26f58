"""Which informer events bring an export back to its controller."""

from __future__ import annotations

from typing import Any

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS
from kubevirt.client.resources import KUBEVIRTS, VIRTUAL_MACHINE_EXPORTS
from kubevirt.controller import key_for

from .world import CLAIM, EXPORT, KUBEVIRT_NS, NS, World, claim, export

KEY = key_for(NS, EXPORT)


def owned_by(name: str, kind: str = "VirtualMachineExport") -> dict[str, Any]:
    ref = {
        "apiVersion": "export.kubevirt.io/v1beta1",
        "kind": kind,
        "name": name,
        "uid": "u",
        "controller": True,
    }
    return {"metadata": {"name": "x", "namespace": NS, "ownerReferences": [ref]}}


def world_with_export() -> World:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(VIRTUAL_MACHINE_EXPORTS, export())
    world.sync()
    return world


def test_export_events_enqueue_it() -> None:
    world = world_with_export()
    [stored] = world.exports.list()
    world.controller.on_export_add(stored)
    world.controller.on_export_update(stored, stored)
    assert world.queued == [KEY, KEY]


def test_pods_and_services_enqueue_the_export_that_controls_them() -> None:
    world = world_with_export()
    world.controller.on_pod_delete(owned_by(EXPORT))
    world.controller.on_service_update(owned_by(EXPORT), owned_by(EXPORT))
    assert world.queued == [KEY, KEY]


def test_objects_of_other_or_missing_owners_enqueue_nothing() -> None:
    world = world_with_export()
    world.controller.on_pod_add(owned_by("gone"))
    world.controller.on_pod_add(owned_by(EXPORT, kind="ReplicaSet"))
    world.controller.on_service_add({"metadata": {"name": "plain", "namespace": NS}})
    assert world.queued == []


def test_claim_events_enqueue_the_exports_of_that_claim() -> None:
    world = world_with_export()
    world.controller.on_pvc_update(claim(), claim())
    world.controller.on_pvc_add(claim("other"))
    assert world.queued == [KEY]


def test_only_a_change_of_the_certificate_rotation_strategy_enqueues_every_export() -> None:
    world = world_with_export()
    kubevirt = world.get(KUBEVIRTS, "kubevirt", KUBEVIRT_NS)
    changed = {
        **kubevirt,
        "spec": {"certificateRotateStrategy": {"selfSigned": {"server": {"duration": "2h"}}}},
    }
    world.controller.on_kubevirt_update(
        kubevirt, {**kubevirt, "metadata": {**kubevirt["metadata"], "labels": {"a": "b"}}}
    )
    assert world.queued == []
    world.controller.on_kubevirt_update(kubevirt, changed)
    assert world.queued == [KEY]


def test_the_export_index_follows_the_source_kind() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_EXPORTS, export(source=CLAIM))
    core_group = export(name="core", source=CLAIM)
    core_group["spec"]["source"]["apiGroup"] = "v1"  # the index takes "v1" as the core group too
    world.add(VIRTUAL_MACHINE_EXPORTS, core_group)
    world.add(VIRTUAL_MACHINE_EXPORTS, export("VirtualMachine", CLAIM, name="vm-export"))
    world.sync()
    world.controller.on_pvc_delete(claim())
    assert sorted(world.queued) == [key_for(NS, "core"), KEY]
