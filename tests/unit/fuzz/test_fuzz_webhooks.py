"""Fuzz every admission webhook path: any body gets an AdmissionReview answer or a 400, never a 500.

The server's own answer function is called directly (no HTTP), so many examples fit in little time;
decoding, the input limits and the admitter all run as they do behind the HTTPS listener.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubevirt.admission.state import StaticClusterState
from kubevirt.virt_api.app import build_context
from kubevirt.virt_api.webhooks import routes
from kubevirt.virt_api.webhooks.server import WebhookServer
from kubevirt.virt_config import ClusterConfig
from kubevirt_testing.fuzz_inputs import FUZZ_SETTINGS, VM_SEEDS, VMI_SEEDS, json_values, mutated

SERVER = WebhookServer(routes.webhook_handlers(build_context(ClusterConfig())))


def _gvr(group: str, version: str, resource: str) -> dict[str, str]:
    return {"group": group, "version": version, "resource": resource}


VMI_GVR = _gvr("kubevirt.io", "v1", "virtualmachineinstances")
VM_GVR = _gvr("kubevirt.io", "v1", "virtualmachines")
MIGRATION_GVR = _gvr("kubevirt.io", "v1", "virtualmachineinstancemigrations")
VMIRS_GVR = _gvr("kubevirt.io", "v1", "virtualmachineinstancereplicasets")
POOL_GVR = _gvr("pool.kubevirt.io", "v1alpha1", "virtualmachinepools")
PODS_GVR = _gvr("", "v1", "pods")
PRESET_GVR = _gvr("kubevirt.io", "v1", "virtualmachineinstancepresets")
SNAPSHOT_GVR = _gvr("snapshot.kubevirt.io", "v1beta1", "virtualmachinesnapshots")
RESTORE_GVR = _gvr("snapshot.kubevirt.io", "v1beta1", "virtualmachinerestores")
CLONE_GVR = _gvr("clone.kubevirt.io", "v1beta1", "virtualmachineclones")
EXPORT_GVR = _gvr("export.kubevirt.io", "v1beta1", "virtualmachineexports")

MIGRATIONS = [
    {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstanceMigration",
        "metadata": {"name": "m", "namespace": "default"},
        "spec": {"vmiName": "vm"},
    }
]


def _holder(api_version: str, kind: str, template_key: str, spec: Any) -> dict[str, Any]:
    """A replica set or pool: two replicas of a template with ``spec``, selected by its label."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "holder", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "a"}},
            template_key: {"metadata": {"labels": {"app": "a"}}, "spec": spec},
        },
    }


REPLICA_SETS = [
    _holder("kubevirt.io/v1", "VirtualMachineInstanceReplicaSet", "template", seed["spec"])
    for seed in VMI_SEEDS[:20]
]
POOLS = [
    _holder("pool.kubevirt.io/v1alpha1", "VirtualMachinePool", "virtualMachineTemplate", seed["spec"])
    for seed in VM_SEEDS[:20]
]
PRESETS = [
    {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstancePreset",
        "metadata": {"name": "preset", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "domain": seed["spec"]["domain"]},
    }
    for seed in VMI_SEEDS[:20]
]
_VM_REF = {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "vm"}
SNAPSHOTS = [
    {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineSnapshot",
        "metadata": {"name": "snap", "namespace": "default"},
        "spec": {"source": _VM_REF},
        "status": {"sourceUID": "other-vm", "virtualMachineSnapshotContentName": "content"},
    }
]
RESTORES = [
    {
        "apiVersion": "snapshot.kubevirt.io/v1beta1",
        "kind": "VirtualMachineRestore",
        "metadata": {"name": "restore", "namespace": "default"},
        "spec": {
            "target": _VM_REF,
            "virtualMachineSnapshotName": "snap",
            "patches": ['{"op": "replace", "path": "/spec/running", "value": false}'],
            "volumeRestoreOverrides": [{"volumeName": "disk", "restoreName": "disk-restored"}],
            "volumeRestorePolicy": "InPlace",
        },
    }
]
CLONES = [
    {
        "apiVersion": "clone.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClone",
        "metadata": {"name": "clone", "namespace": "default"},
        "spec": {
            "source": _VM_REF,
            "target": {**_VM_REF, "name": "copy"},
            "labelFilters": ["*", "!skip/*"],
            "newMacAddresses": {"default": "02:00:00:00:00:01"},
            "newSMBiosSerial": "serial",
        },
    }
]
EXPORTS = [
    {
        "apiVersion": "export.kubevirt.io/v1beta1",
        "kind": "VirtualMachineExport",
        "metadata": {"name": "export", "namespace": "default"},
        "spec": {"source": _VM_REF, "tokenSecretRef": "token", "ttlDuration": "1h30m"},
    }
]
# Restores are judged against a snapshot whose content holds a VM with a persistent TPM, so the whole
# admitter runs (with the Snapshot gate on: without it every creation is refused up front; VMExport too).
SNAPSHOT_STATE = StaticClusterState(
    snapshot_objects=[
        *SNAPSHOTS,
        *RESTORES,
        {
            "kind": "VirtualMachineSnapshotContent",
            "metadata": {"name": "content", "namespace": "default"},
            "spec": {
                "source": {
                    "virtualMachine": {
                        "spec": {"template": {"spec": {"domain": {"devices": {"tpm": {"persistent": True}}}}}}
                    }
                }
            },
        },
    ]
)
SNAPSHOT_SERVER = WebhookServer(
    routes.webhook_handlers(
        build_context(ClusterConfig.build(feature_gates=["Snapshot", "VMExport"]), SNAPSHOT_STATE)
    )
)
EVICTIONS = [{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "virt-launcher-vm-x"}}]

# Each path with the resource and the objects it is meant for.
TARGETS: dict[str, tuple[dict[str, str], list[Any]]] = {
    routes.VMI_MUTATE: (VMI_GVR, VMI_SEEDS),
    routes.VMI_VALIDATE_CREATE: (VMI_GVR, VMI_SEEDS),
    routes.VMI_VALIDATE_UPDATE: (VMI_GVR, VMI_SEEDS),
    routes.VM_MUTATE: (VM_GVR, VM_SEEDS),
    routes.VM_VALIDATE: (VM_GVR, VM_SEEDS),
    routes.MIGRATION_MUTATE_CREATE: (MIGRATION_GVR, MIGRATIONS),
    routes.MIGRATION_VALIDATE_CREATE: (MIGRATION_GVR, MIGRATIONS),
    routes.MIGRATION_VALIDATE_UPDATE: (MIGRATION_GVR, MIGRATIONS),
    routes.VMIRS_VALIDATE: (VMIRS_GVR, REPLICA_SETS),
    routes.VMPOOL_VALIDATE: (POOL_GVR, POOLS),
    routes.VMIPRESET_VALIDATE: (PRESET_GVR, PRESETS),
    routes.STATUS_VALIDATE: (VM_GVR, VM_SEEDS),
    routes.POD_EVICTION_VALIDATE: (PODS_GVR, EVICTIONS),
    routes.VMSNAPSHOT_VALIDATE: (SNAPSHOT_GVR, SNAPSHOTS),
    routes.VMRESTORE_VALIDATE: (RESTORE_GVR, RESTORES),
    routes.VM_CLONE_VALIDATE: (CLONE_GVR, CLONES),
    routes.VMEXPORT_VALIDATE: (EXPORT_GVR, EXPORTS),
    routes.VM_CLONE_MUTATE: (CLONE_GVR, CLONES),
}
GVRS = [
    VMI_GVR,
    VM_GVR,
    MIGRATION_GVR,
    VMIRS_GVR,
    POOL_GVR,
    PODS_GVR,
    PRESET_GVR,
    SNAPSHOT_GVR,
    RESTORE_GVR,
    CLONE_GVR,
    EXPORT_GVR,
]
# The Snapshot and VMExport gates are on for these (without them every creation is refused up front).
GATED = (
    routes.VMSNAPSHOT_VALIDATE,
    routes.VMRESTORE_VALIDATE,
    routes.VM_CLONE_VALIDATE,
    routes.VMEXPORT_VALIDATE,
)


def test_every_path_the_server_serves_is_fuzzed() -> None:
    assert sorted(TARGETS) == SERVER.paths


@st.composite
def review_bodies(draw: st.DrawFn, path: str) -> bytes:
    """An AdmissionReview for ``path``: mostly well-formed around an edited object, sometimes not."""
    gvr, seeds = TARGETS[path]
    shape = draw(st.sampled_from(["review", "review", "review", "review", "json", "bytes"]))
    if shape == "bytes":
        return draw(st.binary(max_size=300))
    if shape == "json":
        return json.dumps(draw(json_values)).encode()
    request: dict[str, Any] = {
        "uid": str(uuid.UUID(int=draw(st.integers(min_value=0, max_value=2**128 - 1)))),
        "operation": draw(st.sampled_from(["CREATE", "CREATE", "UPDATE", "DELETE", "CONNECT"])),
        "resource": draw(st.sampled_from([gvr, gvr, gvr, *GVRS])),
        "subResource": draw(st.sampled_from(["", "", "status", "eviction"])),
        "name": "vm",
        "namespace": "default",
        "userInfo": {
            "username": draw(st.sampled_from(["alice", "system:serviceaccount:kubevirt:kubevirt-handler"]))
        },
        "object": draw(mutated(seeds, deep=True)),
    }
    if draw(st.booleans()):
        request["oldObject"] = draw(mutated(seeds))
    if draw(st.integers(min_value=0, max_value=9)) == 0:  # one field of the envelope replaced
        request[draw(st.sampled_from(sorted(request)))] = draw(json_values)
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(review).encode()


@pytest.mark.parametrize("path", sorted(TARGETS))
@FUZZ_SETTINGS
@given(data=st.data())
def test_any_review_is_answered_or_refused_as_a_bad_request(path: str, data: st.DataObject) -> None:
    body = data.draw(review_bodies(path))
    server = SNAPSHOT_SERVER if path in GATED else SERVER
    reply = server.answer(path, body)
    assert reply.body is not None
    document = json.loads(reply.body)  # type: ignore[arg-type]
    if reply.status == 400:
        assert document["kind"] == "Status"
        assert document["message"].startswith("cannot decode AdmissionReview: ")
        return
    assert reply.status == 200
    answer = document["response"]
    assert isinstance(answer["allowed"], bool)
    if not answer["allowed"]:
        assert answer["status"]["code"] != 500, answer["status"]["message"]
