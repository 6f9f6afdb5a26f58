"""VirtualMachineSnapshot and VirtualMachineRestore admission, as KubeVirt v1.6's storage admitters answer."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.admission.review import CREATE, DELETE, UPDATE, AdmissionRequest, GroupVersionResource
from kubevirt.admission.snapshot import admit_vm_restore, admit_vm_snapshot
from kubevirt.admission.state import NoClusterState, StaticClusterState
from kubevirt.virt_api.app import build_context
from kubevirt.virt_api.webhooks.routes import VMRESTORE_VALIDATE, VMSNAPSHOT_VALIDATE, webhook_handlers
from kubevirt.virt_config import ClusterConfig

JSON = dict[str, Any]
GATED = ClusterConfig.build(feature_gates=["Snapshot"])
VM_REF = {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "vm"}


def _causes(answer: Any) -> list[tuple[str, str, str]]:
    return [(c.type, c.field, c.message) for c in answer.causes]


def _snapshot(**source: Any) -> JSON:
    return {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineSnapshot",
        "metadata": {"name": "snap", "namespace": "ns"},
        "spec": {"source": {**VM_REF, **source}},
    }


def _restore(name: str = "restore", *, target: JSON | None = None, **spec: Any) -> JSON:
    return {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineRestore",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "target": VM_REF if target is None else target,
            "virtualMachineSnapshotName": "snap",
            **spec,
        },
    }


def _answer(path: str, operation: str, obj: JSON, old: JSON | None = None, **kwargs: Any) -> JSON:
    resource = "virtualmachinesnapshots" if path == VMSNAPSHOT_VALIDATE else "virtualmachinerestores"
    handler = webhook_handlers(build_context(kwargs.get("config", GATED), kwargs.get("state")))[path]
    request = AdmissionRequest(
        uid="u",
        operation=operation,
        resource=kwargs.get("gvr", GroupVersionResource("snapshot.kubevirt.io", "v1beta1", resource)),
        namespace="ns",
        object=obj,
        old_object=old,
    )
    return handler(request).to_dict("u")


# --- VirtualMachineSnapshot ---


def test_a_snapshot_of_a_vm_is_allowed() -> None:
    assert admit_vm_snapshot(CREATE, _snapshot(), None, GATED).allowed


def test_creating_a_snapshot_needs_the_feature_gate() -> None:
    answer = _answer(VMSNAPSHOT_VALIDATE, CREATE, _snapshot(), config=ClusterConfig())
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"] == "snapshot feature gate not enabled"
    # Snapshots made while it was on can still be updated (and so lose their finalizers).
    assert _answer(VMSNAPSHOT_VALIDATE, UPDATE, _snapshot(), _snapshot(), config=ClusterConfig())["allowed"]


@pytest.mark.parametrize(
    ("source", "cause"),
    [
        ({"apiGroup": None}, ("FieldValueNotFound", "spec.source.apiGroup", "missing apiGroup")),
        ({"apiGroup": "apps"}, ("FieldValueInvalid", "spec.source.apiGroup", "invalid apiGroup")),
        ({"kind": "VirtualMachineInstance"}, ("FieldValueInvalid", "spec.source.kind", "invalid kind")),
    ],
)
def test_a_snapshot_source_must_be_a_kubevirt_vm(source: JSON, cause: tuple[str, str, str]) -> None:
    snapshot = _snapshot(**source)
    assert _causes(admit_vm_snapshot(CREATE, snapshot, None, GATED)) == [cause]
    answer = _answer(VMSNAPSHOT_VALIDATE, CREATE, snapshot)
    assert answer["status"]["code"] == 422
    assert answer["status"]["reason"] == "Invalid"
    assert answer["status"]["message"] == cause[2]
    assert answer["status"]["details"]["causes"] == [
        {"reason": cause[0], "field": cause[1], "message": cause[2]}
    ]


def test_a_snapshot_spec_is_immutable() -> None:
    old = _snapshot()
    renamed = _snapshot(name="other")
    assert _causes(admit_vm_snapshot(UPDATE, renamed, old, GATED)) == [
        ("FieldValueInvalid", "spec", "spec in immutable after creation")
    ]
    relabelled = copy.deepcopy(old)
    relabelled["metadata"]["labels"] = {"a": "b"}
    relabelled["status"] = {"readyToUse": True}
    assert admit_vm_snapshot(UPDATE, relabelled, old, GATED).allowed


def test_a_snapshot_webhook_checks_its_resource_and_operation() -> None:
    wrong = GroupVersionResource("kubevirt.io", "v1", "virtualmachines")
    answer = _answer(VMSNAPSHOT_VALIDATE, CREATE, _snapshot(), gvr=wrong)
    assert answer["status"]["message"] == (
        "unexpected resource {Group:kubevirt.io Version:v1 Resource:virtualmachines}"
    )
    assert (
        _answer(VMSNAPSHOT_VALIDATE, DELETE, _snapshot())["status"]["message"]
        == "unexpected operation DELETE"
    )
    missing_old = _answer(VMSNAPSHOT_VALIDATE, UPDATE, _snapshot())
    assert (missing_old["allowed"], missing_old["status"]["code"]) == (False, 400)


# --- VirtualMachineRestore ---


def _vm(uid: str = "vm-uid") -> JSON:
    return {"kind": "VirtualMachine", "metadata": {"name": "vm", "namespace": "ns", "uid": uid}}


def _stored_snapshot(status: JSON | None = None) -> JSON:
    snapshot = _snapshot()
    snapshot["status"] = (
        {"sourceUID": "vm-uid", "virtualMachineSnapshotContentName": "content"} if status is None else status
    )
    return snapshot


def _content(template_spec: JSON | None) -> JSON:
    source: JSON = {}
    if template_spec is not None:
        source["virtualMachine"] = {"spec": {"template": {"spec": template_spec}}}
    return {
        "kind": "VirtualMachineSnapshotContent",
        "metadata": {"name": "content", "namespace": "ns"},
        "spec": {"virtualMachineSnapshotName": "snap", "source": source},
    }


PERSISTENT_TPM = {"domain": {"devices": {"tpm": {"persistent": True}}}}
PERSISTENT_EFI = {"domain": {"firmware": {"bootloader": {"efi": {"persistent": True}}}}}


def _state(*objects: JSON) -> StaticClusterState:
    return StaticClusterState(snapshot_objects=list(objects))


def _restore_causes(restore: JSON, state: StaticClusterState) -> list[tuple[str, str, str]]:
    answer = admit_vm_restore(CREATE, restore, None, "ns", GATED, state)
    assert answer.allowed == (not answer.causes)
    return _causes(answer)


def test_a_restore_of_a_vm_from_its_own_snapshot_is_allowed() -> None:
    state = _state(_vm(), _stored_snapshot(), _content(PERSISTENT_TPM))
    assert _restore_causes(_restore(), state) == []
    assert _answer(VMRESTORE_VALIDATE, CREATE, _restore(), state=state)["allowed"] is True


def test_creating_a_restore_needs_the_feature_gate() -> None:
    answer = _answer(VMRESTORE_VALIDATE, CREATE, _restore(), config=ClusterConfig(), state=_state())
    assert (answer["status"]["code"], answer["status"]["message"]) == (
        400,
        "Snapshot/Restore feature gate not enabled",
    )


@pytest.mark.parametrize(
    ("target", "cause"),
    [
        (
            {"kind": "VirtualMachine", "name": "vm"},
            ("FieldValueNotFound", "spec.target.apiGroup", "missing apiGroup"),
        ),
        ({**VM_REF, "apiGroup": "apps"}, ("FieldValueInvalid", "spec.target.apiGroup", "invalid apiGroup")),
        ({**VM_REF, "kind": "Pod"}, ("FieldValueInvalid", "spec.target.kind", "invalid kind")),
    ],
)
def test_a_restore_target_must_be_a_kubevirt_vm(target: JSON, cause: tuple[str, str, str]) -> None:
    # The rest of the spec is not looked at then: the bad policy goes unreported.
    restore = _restore(target=target, volumeRestorePolicy="Bogus")
    assert _restore_causes(restore, _state()) == [cause]


def test_a_restore_waits_for_unfinished_restores_of_the_same_target() -> None:
    running = _restore("r1")
    done = _restore("r2")
    done["status"] = {"complete": True}
    elsewhere = _restore("r3", target={**VM_REF, "name": "other"})
    # Go tells an unset apiGroup from any value: this one names another target.
    groupless = _restore("r4", target={"kind": "VirtualMachine", "name": "vm"})
    other_namespace = _restore("r5")
    other_namespace["metadata"]["namespace"] = "other"
    state = _state(running, done, elsewhere, groupless, other_namespace)
    assert _restore_causes(_restore(), state) == [
        ("FieldValueInvalid", "spec.target", 'VirtualMachineRestore "r1" in progress')
    ]
    # Also reported next to a bad target.
    bad_kind = _restore(target={**VM_REF, "kind": "Pod"})
    pod_restore = _restore("r6", target={**VM_REF, "kind": "Pod"})
    assert [c[2] for c in _restore_causes(bad_kind, _state(pod_restore))] == [
        "invalid kind",
        'VirtualMachineRestore "r6" in progress',
    ]


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            '{"op": "replace", "path": "/metadata/name", "value": "x"}',
            'patching is valid only for elements under /spec/ only:  "path": "/metadata/name"',
        ),
        (
            '{"op":"remove","path":"/status"}',
            'patching is valid only for elements under /spec/ only: "path":"/status"',
        ),
        (
            '{"op": "replace", "path": "/spec/template/spec/domain/devices/interfaces/0/macAddress", '
            '"value": "02:00:00:00:00:01"}',
            'patch format is not valid - one ":" expected in a single key-value json patch:  '
            '"value": "02:00:00:00:00:01"',
        ),
        ('{"op": "replace", "path": "/spec/running", "value": true}', None),
        ('{"op": "replace", "path": "/metadata/labels/key", "value": "v"}', None),
        ('{"op": "remove", "path": "/metadata/annotations/key"}', None),
    ],
)
def test_restore_patches_may_only_touch_the_spec_labels_and_annotations(
    patch: str, message: str | None
) -> None:
    state = _state(_vm(), _stored_snapshot(), _content({}))
    expected = [("FieldValueInvalid", "spec.patches", message)] if message else []
    assert _restore_causes(_restore(patches=[patch]), state) == expected
    # Without its snapshot a restore is not looked at further, patches included.
    assert _restore_causes(_restore(patches=[patch]), _state(_vm())) == []


@pytest.mark.parametrize("template_spec", [PERSISTENT_TPM, PERSISTENT_EFI])
def test_a_vm_with_backend_storage_restores_only_onto_itself(template_spec: JSON) -> None:
    cause = (
        "FieldValueInvalid",
        "spec",
        "Restore to a different VM is not supported when snapshotted VM has backend storage "
        "(persistent TPM or EFI)",
    )
    snapshot, content = _stored_snapshot(), _content(template_spec)
    # A new VM, or an existing VM that is not the snapshot's source.
    assert _restore_causes(_restore(), _state(snapshot, content)) == [cause]
    assert _restore_causes(_restore(), _state(_vm("another-uid"), snapshot, content)) == [cause]
    # The source itself, or a snapshot that does not know its source, is fine.
    assert _restore_causes(_restore(), _state(_vm(), snapshot, content)) == []
    unknown_source = _stored_snapshot({"virtualMachineSnapshotContentName": "content"})
    assert _restore_causes(_restore(), _state(_vm("another-uid"), unknown_source, content)) == []
    # A disabled TPM needs no storage.
    tpm_off = _content({"domain": {"devices": {"tpm": {"persistent": True, "enabled": False}}}})
    assert _restore_causes(_restore(), _state(snapshot, tpm_off)) == []


@pytest.mark.parametrize(
    ("snapshot", "content", "message"),
    [
        (_stored_snapshot({}), _content({}), "snapshot content name is nil in vmSnapshot status"),
        (
            _stored_snapshot(),
            None,
            'virtualmachinesnapshotcontents.snapshot.kubevirt.io "content" not found',
        ),
        (_stored_snapshot(), _content(None), "unexpected snapshot source"),
    ],
)
def test_a_restore_whose_snapshot_cannot_be_read_is_refused_with_the_reason(
    snapshot: JSON, content: JSON | None, message: str
) -> None:
    state = _state(snapshot, *([content] if content else []))
    answer = _answer(VMRESTORE_VALIDATE, CREATE, _restore(), state=state)
    assert (answer["allowed"], answer["status"]["code"], answer["status"]["message"]) == (False, 400, message)


def test_a_restore_without_a_cluster_is_refused_with_the_reason() -> None:
    answer = _answer(VMRESTORE_VALIDATE, CREATE, _restore(), state=NoClusterState())
    assert answer["status"]["message"] == "no Kubernetes API configured to look up VirtualMachineSnapshots"


def test_volume_restore_overrides_need_a_volume_and_something_to_override() -> None:
    overrides = [
        {},
        {"volumeName": "a", "restoreName": "new-a"},
        {"volumeName": "b", "labels": {}},
        {"volumeName": "c", "annotations": {"k": "v"}},
        {"volumeName": "d", "labels": None},
    ]
    assert _restore_causes(_restore(volumeRestoreOverrides=overrides), _state()) == [
        ("FieldValueRequired", "spec.volumeRestoreOverrides[0].volumeName", "must provide a volume name"),
        ("FieldValueRequired", "spec.volumeRestoreOverrides[0]", "must provide at least one overriden field"),
        ("FieldValueRequired", "spec.volumeRestoreOverrides[4]", "must provide at least one overriden field"),
    ]


@pytest.mark.parametrize(
    ("policy", "valid"), [("InPlace", True), ("RandomizeNames", True), ("", False), ("x", False)]
)
def test_the_volume_restore_policy_must_be_known(policy: str, valid: bool) -> None:
    causes = _restore_causes(_restore(volumeRestorePolicy=policy), _state())
    expected = [
        ("FieldValueInvalid", "spec.volumeRestorePolicy", f'volume restore policy "{policy}" doesn\'t exist')
    ]
    assert causes == ([] if valid else expected)


def test_every_finding_is_reported_together_in_kubevirts_order() -> None:
    restore = _restore(
        patches=['{"op": "remove", "path": "/status"}'],
        volumeRestoreOverrides=[{"volumeName": "a"}],
        volumeRestorePolicy="x",
    )
    state = _state(_stored_snapshot(), _content(PERSISTENT_EFI), _restore("r1"))
    assert [field for _, field, _ in _restore_causes(restore, state)] == [
        "spec.patches",
        "spec",
        "spec.volumeRestoreOverrides[0]",
        "spec.volumeRestorePolicy",
        "spec.target",
    ]


def test_a_restore_spec_is_immutable() -> None:
    old = _restore()
    changed = _restore(volumeRestorePolicy="InPlace")
    answer = _answer(VMRESTORE_VALIDATE, UPDATE, changed, old, state=NoClusterState())
    assert answer["status"]["message"] == "spec in immutable after creation"
    assert answer["status"]["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec", "message": "spec in immutable after creation"}
    ]
    finished = copy.deepcopy(old)
    finished["status"] = {"complete": True}
    # Updates read nothing from the cluster and need no feature gate.
    assert _answer(VMRESTORE_VALIDATE, UPDATE, finished, old, config=ClusterConfig(), state=NoClusterState())[
        "allowed"
    ]


def test_a_restore_webhook_checks_its_resource() -> None:
    wrong = GroupVersionResource("snapshot.kubevirt.io", "v1beta1", "virtualmachinesnapshots")
    answer = _answer(VMRESTORE_VALIDATE, CREATE, _restore(), gvr=wrong, state=_state())
    assert answer["status"]["message"] == (
        "unexpected resource {Group:snapshot.kubevirt.io Version:v1beta1 Resource:virtualmachinesnapshots}"
    )
