"""``/virtualmachineinstances-mutate``: defaults a new VMI; patches ``/metadata``, ``/spec``, ``/status``."""

from __future__ import annotations

import copy

from kubevirt.admission import jsonpatch, response
from kubevirt.admission.pipeline import default_vmi
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import CREATE, AdmissionRequest
from kubevirt.virt_api.webhooks.requests import (
    KUBEVIRT_GROUP,
    Admit,
    WebhookContext,
    check_schema,
    guarded,
    new_object,
    require_resource,
)

PATCHED_FIELDS = ("metadata", "spec", "status")


def mutator(ctx: WebhookContext) -> Admit:
    def mutate(request: AdmissionRequest) -> AdmissionResponse:
        require_resource(request, KUBEVIRT_GROUP, "virtualmachineinstances")
        vmi = new_object(request)
        if request.operation != CREATE:
            return response.allowed()
        check_schema(ctx, "VirtualMachineInstance", vmi)
        mutated = default_vmi(copy.deepcopy(vmi), ctx.config, ctx.vmi_defaulter)
        return response.patched(jsonpatch.top_level(vmi, mutated, PATCHED_FIELDS))

    return guarded(mutate)
