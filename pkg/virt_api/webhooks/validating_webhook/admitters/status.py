"""``/status-validate``: status subresource updates of VMs (volume requests); others pass."""

from __future__ import annotations

from kubevirt.admission import response
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.admission.status import admit_vm_status
from kubevirt.virt_api.webhooks.requests import Admit, WebhookContext, guarded, new_object, running_vmi


def admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        if request.resource.resource != "virtualmachines":
            return response.allowed()
        vm = new_object(request)
        vmi = running_vmi(ctx, request, vm)
        return response.from_causes(admit_vm_status(vm, ctx.config, running_vmi=vmi))

    return guarded(admit)
