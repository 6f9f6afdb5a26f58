"""``/virtualmachinesnapshots-validate`` and ``/virtualmachinerestores-validate``."""

from __future__ import annotations

from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import UPDATE, AdmissionRequest
from kubevirt.admission.snapshot import admit_vm_restore, admit_vm_snapshot
from kubevirt.admission.state import NoClusterState, SnapshotState
from kubevirt.virt_api.webhooks.requests import (
    Admit,
    WebhookContext,
    guarded,
    new_object,
    old_object,
    require_group_resource,
)
from kubevirt_api.snapshot.v1beta1.types import SNAPSHOT_GROUP_NAME
from kubevirt_api.view import JSON

SNAPSHOTS = "virtualmachinesnapshots"
RESTORES = "virtualmachinerestores"


def _old(request: AdmissionRequest) -> JSON | None:
    return old_object(request) if request.operation == UPDATE else None


def snapshot_admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        require_group_resource(request, SNAPSHOT_GROUP_NAME, SNAPSHOTS)
        return admit_vm_snapshot(request.operation, new_object(request), _old(request), ctx.config)

    return guarded(admit)


def restore_admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        require_group_resource(request, SNAPSHOT_GROUP_NAME, RESTORES)
        # A state that cannot read snapshots answers every lookup with the reason, as without an API.
        state: SnapshotState = ctx.state if isinstance(ctx.state, SnapshotState) else NoClusterState()
        restore = new_object(request)
        return admit_vm_restore(
            request.operation, restore, _old(request), request.namespace, ctx.config, state
        )

    return guarded(admit)
