"""``/virtualmachines-mutate``: instance type matchers (checked, inferred from volumes), the template's
architecture and machine type."""

from __future__ import annotations

import copy

from kubevirt.admission import jsonpatch, response
from kubevirt.admission.instancetypes import find_specs, infer_from_volumes, matcher_causes
from kubevirt.admission.mutation import default_vm_object
from kubevirt.admission.pipeline import default_vm
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.admission.state import InstancetypeState
from kubevirt.instancetype.infer import InferenceError
from kubevirt.virt_api.webhooks.requests import (
    KUBEVIRT_GROUP,
    Admit,
    WebhookContext,
    checked_object,
    guarded,
)
from kubevirt_api.core.v1.vm import VirtualMachine

PATCHED_FIELDS = ("metadata", "spec")


def mutator(ctx: WebhookContext) -> Admit:
    def mutate(request: AdmissionRequest) -> AdmissionResponse:
        vm = checked_object(ctx, request, KUBEVIRT_GROUP, "virtualmachines", "VirtualMachine")
        # Decoding first reports bad values (a malformed quantity) the way KubeVirt does.
        default_vm(vm, ctx.config, lambda _vm, _config: None)
        refused = matcher_causes(vm)
        if refused:
            return response.from_causes(refused)
        original = copy.deepcopy(vm)
        try:
            infer_from_volumes(vm, ctx.state, request.namespace)
        except InferenceError as err:
            return response.error(err.message)
        state = ctx.state if isinstance(ctx.state, InstancetypeState) else None
        preference = find_specs(VirtualMachine.from_dict(vm), request.namespace, state).preference
        mutated = default_vm_object(vm, ctx.config, preference)
        return response.patched(jsonpatch.top_level(original, mutated, PATCHED_FIELDS))

    return guarded(mutate)
