"""``/virtualmachineinstances-validate-create`` and ``-update``."""

from __future__ import annotations

from kubevirt.admission import response
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.admission.vmi_create import admit_vmi_create
from kubevirt.admission.vmi_update import admit_vmi_update
from kubevirt.virt_api.webhooks.requests import (
    KUBEVIRT_GROUP,
    Admit,
    WebhookContext,
    check_schema,
    checked_object,
    guarded,
    new_object,
    old_object,
    require_resource,
)

RESOURCE = "virtualmachineinstances"


def create_admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        vmi = checked_object(ctx, request, KUBEVIRT_GROUP, RESOURCE, "VirtualMachineInstance")
        account = ctx.is_kubevirt_account(request)
        return response.from_causes(admit_vmi_create(vmi, ctx.config, kubevirt_account=account))

    return guarded(admit)


def update_admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        require_resource(request, KUBEVIRT_GROUP, RESOURCE)
        new, old = new_object(request), old_object(request)
        check_schema(ctx, "VirtualMachineInstance", new)
        return admit_vmi_update(new, old, ctx.config, username=request.username, extra=request.extra)

    return guarded(admit)
