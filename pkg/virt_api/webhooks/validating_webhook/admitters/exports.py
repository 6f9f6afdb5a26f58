"""``/virtualmachineexports-validate`` (KubeVirt's ``ServeVMExports``)."""

from __future__ import annotations

from kubevirt.admission.export import EXPORTS, admit_vm_export
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import UPDATE, AdmissionRequest
from kubevirt.virt_api.webhooks.requests import (
    Admit,
    WebhookContext,
    guarded,
    new_object,
    old_object,
    require_group_resource,
)
from kubevirt_api.export.v1beta1.types import EXPORT_GROUP_NAME


def admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        require_group_resource(request, EXPORT_GROUP_NAME, EXPORTS)
        export = new_object(request)
        old = old_object(request) if request.operation == UPDATE else None
        return admit_vm_export(request.operation, export, old, ctx.config)

    return guarded(admit)
