"""``/virtualmachines-validate``: the VM's template and run strategy, on a defaulted copy."""

from __future__ import annotations

import copy

from kubevirt.admission import response
from kubevirt.admission.json_fields import obj
from kubevirt.admission.pipeline import expand_and_default_vm
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.admission.state import InstancetypeState
from kubevirt.admission.vm import admit_vm
from kubevirt.monitoring import virt_api as monitoring
from kubevirt.virt_api.webhooks.requests import (
    KUBEVIRT_GROUP,
    Admit,
    WebhookContext,
    checked_object,
    guarded,
    running_vmi,
)


def admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        vm = checked_object(ctx, request, KUBEVIRT_GROUP, "virtualmachines", "VirtualMachine")
        # A VM being deleted is let through so it never races other deletions.
        if obj(vm, "metadata").get("deletionTimestamp") is not None:
            return response.allowed()
        # The instance type and preference are applied to the copy that is checked, never stored.
        state = ctx.state if isinstance(ctx.state, InstancetypeState) else None
        defaulted, expansion = expand_and_default_vm(
            copy.deepcopy(vm), ctx.config, ctx.vm_defaulter, state=state, namespace=request.namespace
        )
        if expansion:
            return response.from_causes(expansion)
        account = ctx.is_kubevirt_account(request)
        causes = admit_vm(
            defaulted,
            ctx.config,
            operation=request.operation,
            kubevirt_account=account,
            old=request.old_object,
            submitted=vm,
            running_vmi=lambda: running_vmi(ctx, request, vm),
            namespace=request.namespace,
        )
        if not causes and request.operation == "CREATE" and not request.dry_run:
            monitoring.vm_created(request.namespace)
        return response.from_causes(causes)

    return guarded(admit)
