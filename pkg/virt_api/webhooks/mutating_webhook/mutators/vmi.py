"""``/virtualmachineinstances-mutate``: defaults a new VMI; patches ``/metadata``, ``/spec``, ``/status``."""

from __future__ import annotations

import copy

from kubevirt.admission import jsonpatch, response
from kubevirt.admission.pipeline import default_vmi
from kubevirt.admission.presets import PresetConflictError, apply_presets
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import CREATE, AdmissionRequest
from kubevirt.admission.state import ClusterStateError, PresetState
from kubevirt.virt_api.webhooks.requests import (
    KUBEVIRT_GROUP,
    Admit,
    RequestRefusedError,
    WebhookContext,
    check_schema,
    guarded,
    new_object,
    require_resource,
)
from kubevirt_api.view import JSON

PATCHED_FIELDS = ("metadata", "spec", "status")


def mutator(ctx: WebhookContext) -> Admit:
    def mutate(request: AdmissionRequest) -> AdmissionResponse:
        require_resource(request, KUBEVIRT_GROUP, "virtualmachineinstances")
        vmi = new_object(request)
        if request.operation != CREATE:
            return response.allowed()
        check_schema(ctx, "VirtualMachineInstance", vmi)
        working = copy.deepcopy(vmi)
        _apply_presets(ctx, request, working)
        mutated = default_vmi(working, ctx.config, ctx.vmi_defaulter)
        return response.patched(jsonpatch.top_level(vmi, mutated, PATCHED_FIELDS))

    return guarded(mutate)


def _apply_presets(ctx: WebhookContext, request: AdmissionRequest, vmi: JSON) -> None:
    """KubeVirt applies the namespace's matching presets before defaulting; a conflict refuses with 422."""
    if not isinstance(ctx.state, PresetState):
        return
    namespace = (vmi.get("metadata") or {}).get("namespace") or request.namespace
    try:
        apply_presets(vmi, ctx.state.list_vmi_presets(namespace))
    except (PresetConflictError, ClusterStateError) as err:
        raise RequestRefusedError(response.error(str(err), response.HTTP_UNPROCESSABLE)) from None
