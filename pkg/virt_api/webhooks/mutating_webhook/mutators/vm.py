"""``/virtualmachines-mutate``: instance type matchers (checked, inferred from volumes), a new VM's
firmware UUID and serial, the template's architecture and machine type, quantities in Go's form."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from kubevirt.admission import jsonpatch, response
from kubevirt.admission.instancetypes import find_specs, infer_from_volumes, matcher_causes
from kubevirt.admission.mutation import default_vm_object, go_quantities
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
        modeled = default_vm(vm, ctx.config, lambda _vm, _config: None)
        refused = matcher_causes(vm)
        if refused:
            return response.from_causes(refused)
        original = copy.deepcopy(vm)
        try:
            infer_from_volumes(vm, ctx.state, request.namespace)
        except InferenceError as err:
            return response.error(err.message)
        if request.operation == "CREATE":  # never on update: the VM controller may be setting one
            set_firmware_defaults_if_empty(vm)
        state = ctx.state if isinstance(ctx.state, InstancetypeState) else None
        preference = find_specs(VirtualMachine.from_dict(vm), request.namespace, state).preference
        mutated = default_vm_object(vm, ctx.config, preference)
        mutated["spec"] = go_quantities(mutated.get("spec"), modeled.get("spec"))
        return response.patched(jsonpatch.top_level(original, mutated, PATCHED_FIELDS))

    return guarded(mutate)


def set_firmware_defaults_if_empty(vm: dict[str, Any]) -> None:
    """A new VM's template gets a random firmware UUID and SMBIOS serial where it names none, as KubeVirt's
    VM mutator does on create: the VM controller then has no UUID of its own to write into the spec (which
    would bump ``metadata.generation`` past what KubeVirt's clients expect)."""
    template = vm.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})
    firmware = template.setdefault("domain", {}).get("firmware") or {}
    if not firmware.get("uuid"):
        firmware["uuid"] = str(uuid.uuid4())
    if not firmware.get("serial"):
        firmware["serial"] = str(uuid.uuid4())
    template["domain"]["firmware"] = firmware
