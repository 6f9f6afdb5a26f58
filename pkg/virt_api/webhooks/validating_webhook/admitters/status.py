"""``/status-validate``: status subresource updates of VMs (volume requests); others pass."""

from __future__ import annotations

from kubevirt.admission import response
from kubevirt.admission._json import obj, text
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.admission.state import ClusterStateError
from kubevirt.admission.status import admit_vm_status
from kubevirt.virt_api.webhooks.requests import Admit, WebhookContext, guarded, new_object


def admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        if request.resource.resource != "virtualmachines":
            return response.allowed()
        vm = new_object(request)
        vm_status = obj(vm, "status")
        migrating = False
        if vm_status.get("ready") is True and vm_status.get("volumeRequests"):
            meta = obj(vm, "metadata")
            try:
                vmi = ctx.state.get_vmi(text(meta, "namespace") or request.namespace, text(meta, "name"))
            except ClusterStateError as err:
                return response.error(str(err))
            migration_state = obj(obj(vmi or {}, "status"), "migrationState")
            migrating = bool(migration_state) and migration_state.get("completed") is not True
        return response.from_causes(admit_vm_status(vm, ctx.config, vmi_migrating=migrating))

    return guarded(admit)
