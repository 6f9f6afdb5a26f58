"""The predicates KubeVirt's Go types carry (IsFinal, RunStrategy, IsDecentralized…)."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance, VirtualMachineInstanceMigration

SPEC: dict[str, Any] = {"domain": {"devices": {}}}


def vmi(status: dict[str, Any] | None = None, **spec: Any) -> VirtualMachineInstance:
    data: dict[str, Any] = {"spec": {**SPEC, **spec}}
    if status is not None:
        data["status"] = status
    return VirtualMachineInstance.from_dict(data)


def migration(
    spec: dict[str, Any], phase: str | None = None, uid: str = "m-uid"
) -> VirtualMachineInstanceMigration:
    data: dict[str, Any] = {"metadata": {"uid": uid}, "spec": spec}
    if phase is not None:
        data["status"] = {"phase": phase}
    return VirtualMachineInstanceMigration.from_dict(data)


@pytest.mark.parametrize(
    ("phase", "final", "unprocessed", "running"),
    [
        (None, False, True, False),
        ("Pending", False, True, False),
        ("Scheduling", False, False, False),
        ("Running", False, False, True),
        ("Succeeded", True, False, False),
        ("Failed", True, False, False),
    ],
)
def test_vmi_phase_predicates(phase: str | None, final: bool, unprocessed: bool, running: bool) -> None:
    subject = vmi(None if phase is None else {"phase": phase})
    assert subject.phase == (phase or "")
    assert (subject.is_final(), subject.is_unprocessed(), subject.is_running()) == (
        final,
        unprocessed,
        running,
    )


def test_vmi_spec_predicates() -> None:
    plain = vmi()
    assert not plain.is_cpu_dedicated()
    assert not plain.is_high_performance_vmi()
    assert not plain.is_bootloader_efi()
    assert not plain.should_start_paused()
    assert not plain.wants_to_have_qos_guaranteed()
    assert vmi(domain={"devices": {}, "cpu": {"dedicatedCpuPlacement": True}}).is_high_performance_vmi()
    assert vmi(domain={"devices": {}, "memory": {"hugepages": {"pageSize": "2Mi"}}}).is_high_performance_vmi()
    assert vmi(domain={"devices": {}, "firmware": {"bootloader": {"efi": {}}}}).is_bootloader_efi()
    assert vmi(startStrategy="Paused").should_start_paused()
    guaranteed = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1000m", "memory": "1024Mi"}}
    assert vmi(domain={"devices": {}, "resources": guaranteed}).wants_to_have_qos_guaranteed()
    burstable = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
    assert not vmi(domain={"devices": {}, "resources": burstable}).wants_to_have_qos_guaranteed()
    memory_limit_only = {"requests": {"cpu": "2"}, "limits": {"cpu": "2", "memory": "1Gi"}}
    assert vmi(domain={"devices": {}, "resources": memory_limit_only}).wants_to_have_qos_guaranteed()
    no_cpu_request = {"requests": {"memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
    assert not vmi(domain={"devices": {}, "resources": no_cpu_request}).wants_to_have_qos_guaranteed()


def test_vmi_status_predicates() -> None:
    assert vmi({"conditions": [{"type": "LiveMigratable", "status": "True"}]}).is_migratable()
    assert not vmi({"conditions": [{"type": "LiveMigratable", "status": "False"}]}).is_migratable()
    assert vmi({"migrationMethod": "BlockMigration"}).is_block_migration()
    assert vmi({"migratedVolumes": [{"volumeName": "a"}]}).is_block_migration()
    assert vmi({"evacuationNodeName": "node01"}).is_marked_for_eviction()
    assert vmi({"migrationState": {"completed": True}}).is_migration_completed()
    marked = VirtualMachineInstance.from_dict(
        {
            "metadata": {
                "deletionTimestamp": "2026-11-30T10:00:00Z",
                "annotations": {"kubevirt.io/create-migration-target": "true"},
                "labels": {"kubevirt.io/migrationTargetNodeName": "node02"},
            },
            "spec": SPEC,
        }
    )
    assert marked.is_marked_for_deletion()
    assert marked.is_migration_target()
    assert marked.is_migration_target_node_label_set()


def test_decentralized_migration_state() -> None:
    source_side = vmi(
        {
            "migrationState": {
                "sourceState": {"migrationUID": "s", "pod": "p", "node": "n", "nodeSelectors": {}},
                "targetState": {
                    "migrationUID": "t",
                    "syncAddress": "10.0.0.2:9185",
                    "nodeAddress": "10.0.0.2",
                },
            }
        }
    )
    assert source_side.is_decentralized_migration()
    assert source_side.is_migration_source()
    assert source_side.is_migration_source_synchronized()
    receive = migration({"receive": {"migrationID": "x"}})
    assert source_side.is_migration_synchronized(receive)
    assert not source_side.is_target_preparing(receive)  # the target has no pod yet
    both_sides = vmi(
        {"migrationState": {"sourceState": {"syncAddress": "a"}, "targetState": {"syncAddress": "b"}}}
    )
    assert not both_sides.is_decentralized_migration()


def test_local_migration_target_preparation() -> None:
    local = migration({"vmiName": "v"}, uid="m1")
    assert not vmi().is_migration_synchronized(local)
    assert vmi({"migrationState": {}}).is_migration_synchronized(local)
    assert vmi({"migrationState": {"migrationUid": "m1", "targetNode": "node02"}}).is_target_preparing(local)
    assert not vmi({"migrationState": {"migrationUid": "m0", "targetNode": "node02"}}).is_target_preparing(
        local
    )


@pytest.mark.parametrize(
    ("phase", "final", "running", "created", "handed_off"),
    [
        (None, False, False, False, False),
        ("Pending", False, False, False, False),
        ("Scheduling", False, True, True, False),
        ("Scheduled", False, True, True, False),
        ("PreparingTarget", False, True, True, True),
        ("Running", False, True, True, True),
        ("Synchronizing", False, False, False, False),
        ("Succeeded", True, False, True, True),
        ("Failed", True, False, True, True),
    ],
)
def test_migration_phase_predicates(
    phase: str | None, final: bool, running: bool, created: bool, handed_off: bool
) -> None:
    subject = migration({"vmiName": "v"}, phase)
    assert (subject.is_final(), subject.is_running()) == (final, running)
    assert (subject.target_is_created(), subject.target_is_handed_off()) == (created, handed_off)


def test_migration_sides() -> None:
    local = migration({"vmiName": "v"})
    send = migration({"sendTo": {"migrationID": "x", "connectURL": "https://target"}})
    receive = migration({"receive": {"migrationID": "x"}})
    assert [m.is_decentralized() for m in (local, send, receive)] == [False, True, True]
    assert [m.is_local_or_decentralized_source() for m in (local, send, receive)] == [True, True, False]
    assert [m.is_local_or_decentralized_target() for m in (local, send, receive)] == [True, False, True]
    assert [m.is_decentralized_source() for m in (local, send, receive)] == [False, True, False]
    assert [m.is_decentralized_target() for m in (local, send, receive)] == [False, False, True]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, "Halted"),
        ({"running": True}, "Always"),
        ({"running": False}, "Halted"),
        ({"runStrategy": "Manual"}, "Manual"),
    ],
)
def test_vm_run_strategy(spec: dict[str, Any], expected: str) -> None:
    vm = VirtualMachine.from_dict({"spec": {**spec, "template": {"spec": SPEC}}})
    assert vm.run_strategy() == expected


def test_vm_with_running_and_run_strategy_has_none() -> None:
    vm = VirtualMachine.from_dict(
        {"spec": {"running": True, "runStrategy": "Always", "template": {"spec": SPEC}}}
    )
    with pytest.raises(ValueError, match="mutually exclusive"):
        vm.run_strategy()
