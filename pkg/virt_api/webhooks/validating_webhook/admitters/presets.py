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
    checked_object,
    guarded,
)


def admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        preset = checked_object(
            ctx, request, KUBEVIRT_GROUP, "virtualmachineinstancepresets", "VirtualMachineInstancePreset"
        )
        return response.from_causes(admit_preset(preset))

    return guarded(admit)
