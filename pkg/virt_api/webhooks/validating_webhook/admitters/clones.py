"""``/vm-clone-validate-create`` (creates and updates) and ``/vm-clone-mutate-create``."""

from __future__ import annotations

from kubevirt.admission.clone import CLONES, admit_vm_clone, clone_resource_error, mutate_vm_clone
from kubevirt.admission.k8s_names import random_suffix
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.virt_api.webhooks.requests import Admit, WebhookContext, guarded, new_object, require_resource
from kubevirt_api.clone.v1beta1.types import CLONE_GROUP_NAME


def admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        refused = clone_resource_error(request.resource.group, request.resource.resource)
        if refused is not None:
            return refused
        return admit_vm_clone(request.operation, new_object(request), ctx.config)

    return guarded(admit)


def mutator(ctx: WebhookContext) -> Admit:
    def mutate(request: AdmissionRequest) -> AdmissionResponse:
        require_resource(request, CLONE_GROUP_NAME, CLONES)
        return mutate_vm_clone(new_object(request), random_suffix(), schema=ctx.schema)

    return guarded(mutate)
