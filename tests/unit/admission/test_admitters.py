"""Admitters needing cluster state or old objects: migrations, VMI updates, eviction, pools, status."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kubevirt.admission import kubevirt_cr, vm
from kubevirt.admission.eviction import decide_eviction
from kubevirt.admission.migration import admit_migration_create, admit_migration_update, mutate_migration
from kubevirt.admission.replicaset import admit_pool, admit_replicaset
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import CREATE, UPDATE, decode_review
from kubevirt.admission.selectors import SelectorError, matches
from kubevirt.admission.state import NoClusterState, StaticClusterState
from kubevirt.admission.status import admit_vm_status
from kubevirt.admission.vmi_update import admit_vmi_update
from kubevirt.monitoring import virt_api as monitoring
from kubevirt.virt_api.app import build_context
from kubevirt.virt_api.webhooks.routes import VMI_VALIDATE_UPDATE, webhook_handlers
from kubevirt.virt_config import ClusterConfig

CONFIG = ClusterConfig()
HANDLER = "system:serviceaccount:kubevirt:kubevirt-handler"


def _message(answer: AdmissionResponse) -> str:
    assert answer.status is not None
    return str(answer.status["message"])


def _vmi(name: str = "vm1", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"domain": {"devices": {}}},
        "status": {"phase": "Running", **status},
    }


def _migration(uid: str = "m1", phase: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": uid, "namespace": "ns", "uid": uid, "labels": {"kubevirt.io/vmi-name": "vm1"}},
        "spec": {"vmiName": "vm1"},
        "status": {"phase": phase},
    }


def test_migration_create_needs_vmi_name() -> None:
    answer = admit_migration_create({"spec": {}}, "ns", CONFIG, StaticClusterState())
    assert answer.status is not None
    assert answer.status["code"] == 422
    assert answer.status["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "vmiName is missing", "field": "spec.vmiName"}
    ]


@pytest.mark.parametrize(
    ("vmis", "migrations", "message"),
    [
        ([], [], 'the VMI "ns/vm1" does not exist'),
        ([_vmi(phase="Succeeded")], [], "Cannot migrate VMI in finalized state."),
        (
            [_vmi(conditions=[{"type": "LiveMigratable", "status": "False", "reason": "R", "message": "M"}])],
            [],
            "Cannot migrate VMI, Reason: R, Message: M",
        ),
        (
            [_vmi()],
            [_migration("done", "Succeeded"), _migration("busy", "Running")],
            "in-flight migration detected. Active migration job (busy) is currently already in progress "
            "for VMI vm1.",
        ),
    ],
)
def test_migration_create_refusals(vmis: list[Any], migrations: list[Any], message: str) -> None:
    state = StaticClusterState(vmis=vmis, migrations=migrations)
    answer = admit_migration_create({"spec": {"vmiName": "vm1"}}, "ns", CONFIG, state)
    assert not answer.allowed
    assert _message(answer) == message


def test_migration_create_allowed_when_only_final_migrations_exist() -> None:
    state = StaticClusterState(vmis=[_vmi()], migrations=[_migration("old", "Failed")])
    assert admit_migration_create({"spec": {"vmiName": "vm1"}}, "ns", CONFIG, state).allowed


def test_migration_create_without_cluster_explains() -> None:
    answer = admit_migration_create({"spec": {"vmiName": "vm1"}}, "ns", CONFIG, NoClusterState())
    assert "no Kubernetes API" in _message(answer)


def test_decentralized_migration_needs_its_gate() -> None:
    body = {"spec": {"vmiName": "vm1", "receive": {"migrationID": "x"}}}
    answer = admit_migration_create(body, "ns", CONFIG, StaticClusterState(vmis=[_vmi()]))
    assert "DecentralizedLiveMigration" in _message(answer)
    gated = ClusterConfig.build(feature_gates=["DecentralizedLiveMigration"])
    assert admit_migration_create(body, "ns", gated, StaticClusterState(vmis=[_vmi()])).allowed


def test_migration_mutation_labels_and_finalizes() -> None:
    mutated = mutate_migration({"spec": {"vmiName": "vm1"}})
    assert mutated["metadata"] == {
        "labels": {"kubevirt.io/vmi-name": "vm1"},
        "finalizers": ["kubevirt.io/migrationJobFinalize"],
    }


def test_migration_update_rules() -> None:
    old = _migration()
    changed = _migration()
    changed["spec"]["vmiName"] = "other"
    assert _message(admit_migration_update(changed, old)) == "update of Migration object's spec is restricted"
    relabelled = _migration()
    relabelled["metadata"]["labels"]["kubevirt.io/vmi-name"] = "x"
    assert (
        _message(admit_migration_update(relabelled, old))
        == "selector label can't be modified on an in-flight migration"
    )
    unlabelled = _migration()
    del unlabelled["metadata"]["labels"]
    assert (
        _message(admit_migration_update(unlabelled, old))
        == "selector label can't be removed from an in-flight migration"
    )
    finished = _migration(phase="Succeeded")
    del finished["metadata"]["labels"]
    assert admit_migration_update(finished, old).allowed


def test_users_cannot_change_a_vmi_spec_or_reserved_labels() -> None:
    old = _vmi()
    new = _vmi()
    new["spec"]["domain"]["cpu"] = {"sockets": 2}
    assert (
        _message(admit_vmi_update(new, old, CONFIG, username="alice")) == "update of VMI object is restricted"
    )
    labelled = _vmi()
    labelled["metadata"]["labels"] = {"kubevirt.io/nodeName": "n1"}
    answer = admit_vmi_update(labelled, old, CONFIG, username="alice")
    assert answer.status is not None
    # KubeVirt's cause names no field.
    assert answer.status["details"]["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "message": "modification of the following reserved kubevirt.io/ labels on a VMI object "
            "is prohibited",
        }
    ]
    other = _vmi()
    other["metadata"]["labels"] = {"app": "x"}
    assert admit_vmi_update(other, old, CONFIG, username="alice").allowed


def test_kubevirt_accounts_may_hotplug_but_not_change_limits() -> None:
    old = _vmi()
    old["spec"]["domain"]["cpu"] = {"sockets": 1, "maxSockets": 4}
    hotplug = _vmi()
    hotplug["spec"]["domain"]["cpu"] = {"sockets": 2, "maxSockets": 4}
    hotplug["spec"]["volumes"] = [{"name": "hp", "persistentVolumeClaim": {"claimName": "c"}}]
    assert admit_vmi_update(hotplug, old, CONFIG, username=HANDLER).allowed
    limit = _vmi()
    limit["spec"]["domain"]["cpu"] = {"sockets": 1, "maxSockets": 8}
    assert (
        _message(admit_vmi_update(limit, old, CONFIG, username=HANDLER)) == "CPU topology maxSockets changed"
    )
    # Both limits changed: only the first is reported, without a field, as KubeVirt does.
    both = _vmi()
    both["spec"]["domain"]["cpu"] = {"sockets": 1, "maxSockets": 8}
    both["spec"]["domain"]["memory"] = {"guest": "1Gi", "maxGuest": "8Gi"}
    old_memory = copy.deepcopy(old)
    old_memory["spec"]["domain"]["memory"] = {"guest": "1Gi", "maxGuest": "4Gi"}
    answer = admit_vmi_update(both, old_memory, CONFIG, username=HANDLER)
    assert answer.status is not None
    assert answer.status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": "CPU topology maxSockets changed"}
    ]


def test_hotplug_limits_compare_as_go_reads_them() -> None:
    old = _vmi()
    old["spec"]["domain"]["memory"] = {"guest": "1Gi", "maxGuest": "4Gi"}
    # The same quantity written differently, an explicit zero maxSockets, a maxGuest set where none was.
    same = copy.deepcopy(old)
    same["spec"]["domain"]["memory"]["maxGuest"] = "4096Mi"
    same["spec"]["domain"]["cpu"] = {"sockets": 1, "maxSockets": 0}
    same["spec"]["volumes"] = [{"name": "hp", "persistentVolumeClaim": {"claimName": "c"}}]
    assert admit_vmi_update(same, old, CONFIG, username=HANDLER).allowed
    unset = _vmi()
    unset["spec"]["domain"]["memory"] = {"guest": "1Gi", "maxGuest": "8Gi"}
    assert admit_vmi_update(unset, _vmi(), CONFIG, username=HANDLER).allowed
    grown = copy.deepcopy(old)
    grown["spec"]["domain"]["memory"]["maxGuest"] = "8Gi"
    assert _message(admit_vmi_update(grown, old, CONFIG, username=HANDLER)) == "Memory maxGuest changed"


def test_node_restriction_limits_handlers_to_their_vmis() -> None:
    gated = ClusterConfig.build(feature_gates=["NodeRestriction"])
    old = _vmi(nodeName="node-a")
    mine = {"authentication.kubernetes.io/node-name": ["node-a"]}
    theirs = {"authentication.kubernetes.io/node-name": ["node-b"]}
    assert admit_vmi_update(old, old, gated, username=HANDLER, extra=mine).allowed
    refused = admit_vmi_update(old, old, gated, username=HANDLER, extra=theirs)
    assert _message(refused) == "Node restriction, virt-handler is only allowed to modify VMIs it owns"
    missing = admit_vmi_update(old, old, gated, username=HANDLER, extra={})
    assert _message(missing) == "Node restriction failed, virt-handler service account is missing node name"
    targeted = _vmi(nodeName="node-a", migrationState={"targetNode": "node-b"})
    assert _message(admit_vmi_update(targeted, old, gated, username=HANDLER, extra=mine)) == (
        "Node restriction, virt-handler is not allowed to set target node"
    )
    # The migration target's handler may update the VMI once the target is recorded.
    assert admit_vmi_update(targeted, targeted, gated, username=HANDLER, extra=theirs).allowed


def test_node_restriction_reads_the_node_from_the_review() -> None:
    ctx = build_context(ClusterConfig.build(feature_gates=["NodeRestriction"]))
    update = webhook_handlers(ctx)[VMI_VALIDATE_UPDATE]
    old = _vmi(nodeName="node-a")
    for node, allowed in (("node-a", True), ("node-b", False)):
        body = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u",
                "operation": "UPDATE",
                "resource": {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstances"},
                "userInfo": {
                    "username": HANDLER,
                    "extra": {"authentication.kubernetes.io/node-name": [node]},
                },
                "object": old,
                "oldObject": old,
            },
        }
        answer = update(decode_review(json.dumps(body).encode()).request)
        assert answer.allowed is allowed, answer.status


def _pod(node: str = "node-a") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "virt-launcher-vm1-x",
            "namespace": "ns",
            "labels": {"kubevirt.io": "virt-launcher"},
            "annotations": {"kubevirt.io/domain": "vm1"},
        },
        "spec": {"nodeName": node},
    }


def _migratable(strategy: str | None, migratable: bool, **status: Any) -> dict[str, Any]:
    vmi = _vmi(
        nodeName="node-a",
        conditions=[{"type": "LiveMigratable", "status": "True" if migratable else "False"}],
        **status,
    )
    if strategy is not None:
        vmi["spec"]["evictionStrategy"] = strategy
    return vmi


def test_eviction_of_a_live_migrating_vmi_marks_it_and_denies_with_429() -> None:
    decision = decide_eviction(_pod(), _migratable("LiveMigrate", True), CONFIG)
    assert not decision.response.allowed
    assert decision.response.status is not None
    assert decision.response.status["code"] == 429
    assert _message(decision.response) == 'Eviction triggered evacuation of VMI "ns/vm1"'
    assert decision.vmi_patch == [{"op": "add", "path": "/status/evacuationNodeName", "value": "node-a"}]


@pytest.mark.parametrize(
    ("strategy", "migratable", "allowed", "message"),
    [
        (None, True, True, None),
        ("None", True, True, None),
        ("LiveMigrateIfPossible", False, True, None),
        (
            "LiveMigrate",
            False,
            False,
            "VMI vm1 is configured with an eviction strategy but is not live-migratable",
        ),
    ],
)
def test_eviction_strategies(
    strategy: str | None, migratable: bool, allowed: bool, message: str | None
) -> None:
    decision = decide_eviction(_pod(), _migratable(strategy, migratable), CONFIG)
    assert decision.response.allowed is allowed
    assert decision.vmi_patch is None
    if message is not None:
        assert _message(decision.response) == message


def test_eviction_in_progress_and_target_pod() -> None:
    marked = _migratable("External", False, evacuationNodeName="node-a")
    decision = decide_eviction(_pod(), marked, CONFIG)
    assert (
        _message(decision.response) == 'Evacuation in progress: Eviction triggered evacuation of VMI "ns/vm1"'
    )
    target = decide_eviction(_pod("node-b"), _migratable("External", False), CONFIG)
    assert _message(target.response) == "Eviction request for target Pod"


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_launcher_pod_is_evictable(phase: str) -> None:
    # The source pod of a completed migration: its node now differs from the VMI's.
    pod = _pod()
    pod["status"] = {"phase": phase}
    vmi = _migratable("LiveMigrate", True)
    vmi["status"]["nodeName"] = "node-b"
    decision = decide_eviction(pod, vmi, CONFIG)
    assert decision.response.allowed
    assert decision.vmi_patch is None


def test_non_launcher_pods_are_evictable() -> None:
    pod = _pod()
    pod["metadata"]["labels"] = {"app": "web"}
    assert decide_eviction(pod, None, CONFIG).response.allowed


def test_a_launcher_pod_naming_no_vmi_is_refused_as_client_go_would() -> None:
    pod = _pod()
    assert _message(decide_eviction(pod, None, CONFIG).response) == (
        'kubevirt failed getting the vmi: virtualmachineinstance.kubevirt.io "vm1" not found'
    )
    pod["metadata"]["annotations"]["kubevirt.io/domain"] = ""
    decision = decide_eviction(pod, None, CONFIG)
    assert decision.response.status is not None
    assert decision.response.status["code"] == 429
    assert _message(decision.response) == "kubevirt failed getting the vmi: resource name may not be empty"


def test_label_selectors() -> None:
    labels = {"app": "web", "tier": "front"}
    assert matches({"matchLabels": {"app": "web"}}, labels)
    assert not matches({"matchLabels": {"app": "db"}}, labels)
    assert matches({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}, labels)
    assert not matches({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, labels)
    assert matches({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, labels)
    assert not matches(None, labels)
    with pytest.raises(SelectorError):
        matches({"matchExpressions": [{"key": "x", "operator": "Near"}]}, labels)


def _template(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels},
        "spec": {
            "architecture": "amd64",
            "domain": {"memory": {"guest": "128Mi"}, "devices": {}},
        },
    }


def test_replicaset_template_and_selector() -> None:
    assert admit_replicaset({"spec": {}}, CONFIG)[0].message == "missing virtual machine template."
    ok = {"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": _template({"app": "a"})}}
    assert admit_replicaset(ok, CONFIG) == []
    wrong = {"spec": {"selector": {"matchLabels": {"app": "b"}}, "template": _template({"app": "a"})}}
    causes = admit_replicaset(wrong, CONFIG)
    assert [(c.field, c.message) for c in causes] == [("spec.selector", "selector does not match labels.")]


def test_pool_validates_its_vm_template_and_keeps_the_selector() -> None:
    vm_spec = {"runStrategy": "Bogus", "template": _template({"app": "a"})}
    pool = {
        "spec": {
            "selector": {"matchLabels": {"app": "a"}},
            "virtualMachineTemplate": {"metadata": {"labels": {"app": "a"}}, "spec": vm_spec},
        }
    }
    causes = admit_pool(pool, CONFIG, operation=CREATE)
    assert [(c.field, c.message) for c in causes] == [
        ("spec.virtualMachineTemplate.spec.runStrategy", "Invalid RunStrategy (Bogus)")
    ]
    old = {"spec": {"selector": {"matchLabels": {"app": "z"}}}}
    updated = admit_pool(pool, CONFIG, operation=UPDATE, old=old)
    assert updated[-1].message == "selector is immutable after creation."


def test_wait_as_receiver_needs_its_gate() -> None:
    spec = {"runStrategy": "WaitAsReceiver", "template": _template({})}
    causes = vm.validate_vm_spec(vm.Path("spec"), spec, CONFIG, kubevirt_account=False)
    assert causes[-1].message.startswith("Invalid RunStrategy (WaitAsReceiver), DecentralizedLiveMigration")
    gated = ClusterConfig.build(feature_gates=["DecentralizedLiveMigration"])
    assert vm.validate_vm_spec(vm.Path("spec"), spec, gated, kubevirt_account=False) == []


MIGRATING_VMI: dict[str, Any] = {
    "spec": _template({})["spec"],
    "status": {"migrationState": {"startTimestamp": "2026-01-01T00:00:00Z"}},
}


def _vm_with_requests(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": _template({})}, "status": {"volumeRequests": list(requests)}}


def test_volume_requests_on_vm_status() -> None:
    add = {
        "addVolumeOptions": {
            "name": "hp",
            "disk": {"disk": {"bus": "scsi"}},
            "volumeSource": {"persistentVolumeClaim": {"claimName": "c"}},
        }
    }
    assert admit_vm_status(_vm_with_requests(add), CONFIG) == []
    twice = admit_vm_status(_vm_with_requests(add, add), CONFIG)
    assert twice[0].message == "AddVolume request for [hp] aleady exists"
    virtio = {"addVolumeOptions": {"name": "v", "disk": {"disk": {"bus": "virtio"}}, "volumeSource": {}}}
    assert admit_vm_status(_vm_with_requests(virtio), CONFIG)[0].message == (
        "AddVolume request for [v] requires disk bus to be 'scsi'. [virtio] is not permitted"
    )
    both = {"addVolumeOptions": add["addVolumeOptions"], "removeVolumeOptions": {"name": "hp"}}
    assert "not both" in admit_vm_status(_vm_with_requests(both), CONFIG)[0].message
    migrating = admit_vm_status(_vm_with_requests(add), CONFIG, running_vmi=MIGRATING_VMI)
    assert migrating[0].message == "Cannot handle volume requests while VMI migration is in progress"


def test_kubevirt_cr_rules() -> None:
    assert not kubevirt_cr.admit_kubevirt_create(existing=1).allowed
    assert kubevirt_cr.admit_kubevirt_create(existing=0).allowed
    blocking = {
        "spec": {"uninstallStrategy": "BlockUninstallIfWorkloadsExist"},
        "status": {"phase": "Deployed"},
    }
    refused = kubevirt_cr.admit_kubevirt_delete(blocking, {"VirtualMachines": 2})
    assert _message(refused).startswith(
        "Rejecting the uninstall request, since there are still VirtualMachines present."
    )
    assert kubevirt_cr.admit_kubevirt_delete(blocking, {"VirtualMachines": 0}).allowed
    old = {"spec": {"workloads": {"nodePlacement": {"nodeSelector": {"a": "b"}}}}}
    moved = {"spec": {"workloads": {"nodePlacement": {"nodeSelector": {"a": "c"}}}}}
    assert _message(kubevirt_cr.admit_kubevirt_update(moved, old, vmi_count=3)) == (
        "can't placement of workload pods while there are running vms"
    )
    assert kubevirt_cr.admit_kubevirt_update(moved, old, vmi_count=0).allowed
    assert kubevirt_cr.admit_kubevirt_update(old, old, vmi_count=3).allowed


def _with_tls(tls: dict[str, Any] | None) -> dict[str, Any]:
    return {"spec": {"configuration": {} if tls is None else {"tlsConfiguration": tls}}}


def test_a_tls_configuration_go_cannot_apply_is_refused_on_update() -> None:
    def causes(tls: dict[str, Any], old: dict[str, Any] | None = None) -> list[tuple[str, str]]:
        answer = kubevirt_cr.admit_kubevirt_update(_with_tls(tls), _with_tls(old), vmi_count=0)
        return [(cause.field, cause.message) for cause in answer.causes]

    assert causes({"minTLSVersion": "VersionTLS12", "ciphers": ["TLS_AES_128_GCM_SHA256", "RC4", "x"]}) == [
        ("spec.configuration.tlsConfiguration.ciphers#1", "RC4 is not a valid cipher"),
        ("spec.configuration.tlsConfiguration.ciphers#2", "x is not a valid cipher"),
    ]
    only_tls13 = (
        "spec.configuration.tlsConfiguration.ciphers",
        "You cannot specify ciphers when spec.configuration.tlsConfiguration.minTLSVersion is empty or "
        "VersionTLS13",
    )
    assert causes({"minTLSVersion": "VersionTLS13", "ciphers": ["TLS_AES_128_GCM_SHA256"]}) == [only_tls13]
    assert causes({"ciphers": ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]}) == [only_tls13]
    refused = kubevirt_cr.admit_kubevirt_update(_with_tls({"ciphers": ["x"]}), _with_tls(None), vmi_count=0)
    assert refused.status is not None
    assert (refused.allowed, refused.status["code"]) == (False, 422)
    assert causes({"minTLSVersion": "VersionTLS11", "ciphers": ["TLS_RSA_WITH_RC4_128_SHA"]}) == []
    assert causes({"minTLSVersion": "VersionTLS13"}) == []
    # As in KubeVirt, only a change is checked: an unchanged configuration stays accepted.
    unchanged = {"minTLSVersion": "VersionTLS12", "ciphers": ["x"]}
    assert causes(unchanged, old=unchanged) == []


def test_discontinued_gates_refuse_specs_using_their_api() -> None:
    from kubevirt.admission.vmi_create import admit_vmi_create

    vmi = {
        "spec": {
            "architecture": "amd64",
            "domain": {
                "memory": {"guest": "128Mi"},
                "devices": {"interfaces": [{"name": "n", "macvtap": {}}]},
            },
            "networks": [{"name": "n", "multus": {"networkName": "x"}}],
        }
    }
    gated = ClusterConfig.build(feature_gates=["Macvtap"])
    first = admit_vmi_create(vmi, gated)[0]
    assert (first.type, first.field) == ("FieldValueNotSupported", "")
    assert first.message.startswith("Macvtap network binding is discontinued since v1.3.")
    assert all(not c.message.startswith("Macvtap") for c in admit_vmi_create(vmi, CONFIG))


def test_graduated_gates_count_as_enabled() -> None:
    assert CONFIG.enabled("NUMA")
    assert not CONFIG.enabled("HostDisk")


def _locked_vm(status: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"spec": {"template": _template({}), **spec}, "status": status}


def _pvc_volume(name: str) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": name}}


def _lock_messages(new: dict[str, Any], old: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    return [(c.type, c.field, c.message) for c in vm.admit_vm(new, CONFIG, operation=UPDATE, old=old)]


def test_a_snapshot_in_progress_freezes_the_vm_volumes() -> None:
    snapshotting = {"snapshotInProgress": "snap"}
    old = _locked_vm({}, runStrategy="Halted")
    new = _locked_vm(snapshotting, runStrategy="Halted")
    new["spec"]["template"]["spec"]["volumes"] = [_pvc_volume("disk")]
    assert _lock_messages(new, old) == [
        (
            "FieldValueNotSupported",
            "spec",
            'Cannot update vm disks or volumes until snapshot "snap" completes',
        )
    ]
    # Other template changes pass; so does any update of a VM without a snapshot in progress.
    relabelled = _locked_vm(snapshotting, runStrategy="Halted")
    relabelled["spec"]["template"]["metadata"]["labels"] = {"app": "x"}
    assert _lock_messages(relabelled, old) == []
    assert _lock_messages({**new, "status": {}}, old) == []
    # A creation is never locked.
    assert vm.admit_vm(new, CONFIG, operation=CREATE) == []


@pytest.mark.parametrize(
    ("old_spec", "new_spec", "refused"),
    [
        ({"runStrategy": "Halted"}, {"runStrategy": "Always"}, True),
        ({"runStrategy": "Halted"}, {"runStrategy": "Halted"}, False),
        ({"running": False}, {"running": True}, True),
        ({"running": True}, {"running": True}, False),
        # Switching between running and runStrategy counts as a change even when it means the same.
        ({"running": False}, {"runStrategy": "Halted"}, True),
    ],
)
def test_a_snapshot_in_progress_freezes_the_running_state(
    old_spec: dict[str, Any], new_spec: dict[str, Any], refused: bool
) -> None:
    new = _locked_vm({"snapshotInProgress": "snap"}, **new_spec)
    message = 'Cannot update vm running state until snapshot "snap" completes'
    expected = [("FieldValueNotSupported", "spec", message)] if refused else []
    assert _lock_messages(new, _locked_vm({}, **old_spec)) == expected


@pytest.mark.parametrize(
    ("old_spec", "new_spec", "refused"),
    [
        ({"runStrategy": "Halted"}, {"runStrategy": "Always"}, True),
        ({"runStrategy": "Always"}, {"runStrategy": "Halted"}, True),
        # running: false and Halted are the same strategy.
        ({"running": False}, {"runStrategy": "Halted"}, False),
        ({"runStrategy": "Always"}, {"runStrategy": "Always", "template": _template({"app": "x"})}, False),
    ],
)
def test_a_restore_in_progress_freezes_the_run_strategy(
    old_spec: dict[str, Any], new_spec: dict[str, Any], refused: bool
) -> None:
    new = _locked_vm({"restoreInProgress": "r"}, **new_spec)
    message = 'Cannot update VM runStrategy until restore "r" completes'
    expected = [("FieldValueNotSupported", "spec", message)] if refused else []
    assert _lock_messages(new, _locked_vm({}, **old_spec)) == expected


def test_a_locked_vm_without_its_stored_version_cannot_be_judged() -> None:
    new = _locked_vm({"snapshotInProgress": "snap"}, runStrategy="Halted")
    assert _lock_messages(new, None) == [("UnexpectedServerResponse", "", "Could not fetch old vm")]


def test_a_vm_being_deleted_skips_the_locks_in_the_webhook() -> None:
    old = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", **_locked_vm({}, runStrategy="Halted")}
    old["metadata"] = {"name": "vm", "namespace": "ns"}
    new = copy.deepcopy(old)
    new["spec"]["runStrategy"] = "Always"
    new["status"] = {"snapshotInProgress": "snap"}
    handler = webhook_handlers(build_context(CONFIG))["/virtualmachines-validate"]

    def answer(vm_object: dict[str, Any]) -> AdmissionResponse:
        request = {
            "uid": "u",
            "operation": UPDATE,
            "resource": {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachines"},
            "namespace": "ns",
            "object": vm_object,
            "oldObject": old,
        }
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        return handler(decode_review(json.dumps(review).encode()).request)

    assert _message(answer(new)) == 'Cannot update vm running state until snapshot "snap" completes'
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert answer(new).allowed


def test_cluster_config_from_the_kubevirt_cr() -> None:
    kubevirt = {
        "metadata": {"namespace": "kv"},
        "spec": {
            "configuration": {
                "developerConfiguration": {"featureGates": ["HostDisk", "VSOCK"]},
                "vmRolloutStrategy": "Stage",
                "evictionStrategy": "LiveMigrate",
                "architectureConfiguration": {"amd64": {"emulatedMachines": ["q35*", "pc-q35-rhel*"]}},
                "network": {"permitBridgeInterfaceOnPodNetwork": False},
            }
        },
    }
    config = ClusterConfig.from_kubevirt(kubevirt)
    assert config.feature_gates == frozenset({"HostDisk", "VSOCK"})
    assert not config.live_update
    assert config.eviction_strategy == "LiveMigrate"
    assert config.machines_for("amd64") == ("q35*", "pc-q35-rhel*")
    assert config.permit_bridge_interface_on_pod_network is False
    assert "system:serviceaccount:kv:kubevirt-handler" in config.kubevirt_service_accounts
    assert ClusterConfig.from_kubevirt({}) == ClusterConfig()


def test_snapshot_check_compares_the_vm_as_sent_not_its_defaulted_copy() -> None:
    stored = {"spec": {"runStrategy": "Always", "template": {"spec": {"domain": {"devices": {}}}}}}
    sent = copy.deepcopy(stored)
    sent["status"] = {"snapshotInProgress": "snap"}
    defaulted = copy.deepcopy(sent)
    defaulted["spec"]["template"] = _template({})
    assert vm.admit_vm(defaulted, CONFIG, operation=UPDATE, old=stored, submitted=sent) == []


HOTPLUG = {
    "addVolumeOptions": {
        "name": "hp",
        "disk": {"disk": {"bus": "scsi"}},
        "volumeSource": {"persistentVolumeClaim": {"claimName": "c"}},
    }
}


def test_volume_requests_must_fit_the_running_vmi() -> None:
    running = {
        "spec": {**_template({})["spec"], "volumes": [{"name": "hp", "containerDisk": {"image": "i"}}]}
    }
    causes = admit_vm_status(_vm_with_requests(HOTPLUG), CONFIG, running_vmi=running)
    assert [cause.message for cause in causes] == [
        "AddVolume request for [hp] conflicts with an existing volume of the same name "
        "on currently running vmi"
    ]
    assert causes[0].field == "Status.volumeRequests"
    # The same volume already on the VMI is no conflict.
    same = {
        "spec": {
            **_template({})["spec"],
            "volumes": [{"name": "hp", "persistentVolumeClaim": {"claimName": "c"}}],
        }
    }
    assert admit_vm_status(_vm_with_requests(HOTPLUG), CONFIG, running_vmi=same) == []


def test_the_running_vmi_spec_with_the_requests_applied_is_validated() -> None:
    # The template is fine; the running VMI has a disk without a volume, reported under the template's path.
    spec = _template({})["spec"]
    running = {
        "spec": {**spec, "domain": {**spec["domain"], "devices": {"disks": [{"name": "ghost", "disk": {}}]}}}
    }
    assert admit_vm_status(_vm_with_requests(HOTPLUG), CONFIG) == []
    causes = admit_vm_status(_vm_with_requests(HOTPLUG), CONFIG, running_vmi=running)
    assert [(cause.field, cause.message) for cause in causes] == [
        (
            "spec.template.spec.domain.devices.disks[0].name",
            "spec.template.spec.domain.devices.disks[0].Name 'ghost' not found.",
        )
    ]


@pytest.mark.parametrize(
    ("migration_state", "refused"),
    [
        ({"startTimestamp": "2026-01-01T00:00:00Z"}, True),
        ({"startTimestamp": "2026-01-01T00:00:00Z", "endTimestamp": "2026-01-01T00:01:00Z"}, False),
        # A failed migration ended without completing: volume requests are taken again.
        (
            {
                "startTimestamp": "2026-01-01T00:00:00Z",
                "endTimestamp": "2026-01-01T00:01:00Z",
                "failed": True,
            },
            False,
        ),
        # Scheduled but not started yet.
        ({"targetNode": "n2"}, False),
    ],
)
def test_volume_requests_wait_only_while_a_migration_runs(
    migration_state: dict[str, Any], refused: bool
) -> None:
    running = {"spec": _template({})["spec"], "status": {"migrationState": migration_state}}
    causes = admit_vm_status(_vm_with_requests(HOTPLUG), CONFIG, running_vmi=running)
    messages = [cause.message for cause in causes]
    assert messages == (
        ["Cannot handle volume requests while VMI migration is in progress"] if refused else []
    )


def test_snapshot_and_restore_checks_come_before_volume_requests() -> None:
    old: dict[str, Any] = {"spec": {"runStrategy": "Always", "template": _template({})}}
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["volumes"] = [{"name": "d", "emptyDisk": {"capacity": "1Gi"}}]
    bad_request = {"addVolumeOptions": {"name": "v", "disk": {"disk": {"bus": "virtio"}}, "volumeSource": {}}}
    new["status"] = {"snapshotInProgress": "snap", "volumeRequests": [bad_request]}
    causes = vm.admit_vm(new, CONFIG, operation=UPDATE, old=old)
    assert [cause.message for cause in causes] == [
        'Cannot update vm disks or volumes until snapshot "snap" completes'
    ]


def test_embedded_data_volumes_live_in_the_vm_namespace() -> None:
    template = {
        "metadata": {"name": "dv", "namespace": "other"},
        "spec": {"storage": {}, "source": {"blank": {}}},
    }
    new = {"metadata": {"namespace": "ns"}, "spec": {"runStrategy": "Always", "template": _template({})}}
    new["spec"]["dataVolumeTemplates"] = [template]
    new["spec"]["template"]["spec"]["volumes"] = [{"name": "root", "dataVolume": {"name": "dv"}}]
    new["spec"]["template"]["spec"]["domain"]["devices"] = {"disks": [{"name": "root", "disk": {}}]}
    causes = vm.data_volume_namespace_causes(new, "", None)
    assert [(cause.field, cause.message) for cause in causes] == [
        ("spec.dataVolumeTemplates[0]", "Embedded DataVolume namespace other differs from VM namespace ns")
    ]
    # Without a namespace in the VM's metadata, the request's counts.
    del new["metadata"]["namespace"]
    assert vm.data_volume_namespace_causes(new, "other", None) == []
    assert vm.data_volume_namespace_causes(new, "", None) == []
    # An update that leaves the templates as they were is not checked again.
    new["metadata"]["namespace"] = "ns"
    assert vm.data_volume_namespace_causes(new, "", copy.deepcopy(new)) == []
    # The admitter reports it before the snapshot check.
    old = copy.deepcopy(new)
    del old["spec"]["dataVolumeTemplates"]
    new["status"] = {"snapshotInProgress": "snap"}
    messages = [cause.message for cause in vm.admit_vm(new, CONFIG, operation=UPDATE, old=old)]
    assert messages == ["Embedded DataVolume namespace other differs from VM namespace ns"]


def _created_vms(namespace: str) -> float:
    registry = CollectorRegistry()
    monitoring.register(registry)
    return registry.get_sample_value("kubevirt_vm_created_by_pod_total", {"namespace": namespace}) or 0.0


def test_an_admitted_vm_create_counts_in_kubevirt_vm_created_by_pod_total() -> None:
    handler = webhook_handlers(build_context(CONFIG))["/virtualmachines-validate"]
    good = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", **_locked_vm({}, runStrategy="Halted")}
    good["metadata"] = {"name": "vm", "namespace": "counted"}
    bad = copy.deepcopy(good)
    bad["spec"]["runStrategy"] = "Sometimes"

    def answer(vm_object: dict[str, Any], *, dry_run: bool = False) -> AdmissionResponse:
        request = {
            "uid": "u",
            "operation": "CREATE",
            "resource": {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachines"},
            "namespace": "counted",
            "object": vm_object,
            "dryRun": dry_run,
        }
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        return handler(decode_review(json.dumps(review).encode()).request)

    before = _created_vms("counted")
    assert answer(good).allowed
    assert not answer(bad).allowed
    assert answer(good, dry_run=True).allowed
    assert _created_vms("counted") == before + 1
