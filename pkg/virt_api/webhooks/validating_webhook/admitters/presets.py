"""``/vmipreset-validate``: VirtualMachineInstancePresets (deprecated, still served and validated)."""

from __future__ import annotations

from kubevirt.admission import response
from kubevirt.admission.preset import admit_preset
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.virt_api.webhooks.requests import (
    KUBEVIRT_GROUP,
    Admit,
    WebhookContext,
    check_schema,
    guarded,
    new_object,
    require_resource,
)


def admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        require_resource(request, KUBEVIRT_GROUP, "virtualmachineinstancepresets")
        preset = new_object(request)
        check_schema(ctx, "VirtualMachineInstancePreset", preset)
        return response.from_causes(admit_preset(preset))

    return guarded(admit)
