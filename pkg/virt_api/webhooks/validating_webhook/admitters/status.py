"""``/status-validate``: status subresource updates of VMs (volume requests, snapshot and restore locks);
others pass."""

from __future__ import annotations

from kubevirt.admission import response
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import UPDATE, AdmissionRequest
from kubevirt.admission.status import admit_vm_status
from kubevirt.admission.vm import storage_status_causes
from kubevirt.virt_api.webhooks.requests import Admit, WebhookContext, guarded, new_object, running_vmi


def admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        if request.resource.resource != "virtualmachines":
            return response.allowed()
        vm = new_object(request)
        causes = admit_vm_status(vm, ctx.config, running_vmi=running_vmi(ctx, request, vm))
        # Then KubeVirt's storage status checks (the snapshot and restore locks), which unlike the VM
        # webhook's also apply to a VM being deleted.
        if not causes and request.operation == UPDATE:
            causes = storage_status_causes(vm, request.old_object)
        return response.from_causes(causes)

    return guarded(admit)
