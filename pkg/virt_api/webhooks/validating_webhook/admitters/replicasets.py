"""``/virtualmachinereplicaset-validate`` and ``/virtualmachinepool-validate``."""

from __future__ import annotations

from kubevirt.admission import response
from kubevirt.admission.replicaset import admit_pool, admit_replicaset
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import UPDATE, AdmissionRequest
from kubevirt.virt_api.webhooks.requests import (
    KUBEVIRT_GROUP,
    POOL_GROUP,
    Admit,
    WebhookContext,
    checked_object,
    guarded,
)


def replicaset_admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        rs = checked_object(
            ctx,
            request,
            KUBEVIRT_GROUP,
            "virtualmachineinstancereplicasets",
            "VirtualMachineInstanceReplicaSet",
        )
        return response.from_causes(admit_replicaset(rs, ctx.config))

    return guarded(admit)


def pool_admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        pool = checked_object(ctx, request, POOL_GROUP, "virtualmachinepools", "VirtualMachinePool")
        old = request.old_object if request.operation == UPDATE else None
        account = ctx.is_kubevirt_account(request)
        causes = admit_pool(pool, ctx.config, operation=request.operation, old=old, kubevirt_account=account)
        return response.from_causes(causes)

    return guarded(admit)
