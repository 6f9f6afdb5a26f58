"""``/pod-eviction-validate``: evicting a virt-launcher pod triggers a live migration instead."""

from __future__ import annotations

from kubevirt.admission import response
from kubevirt.admission.eviction import decide_eviction, is_completed
from kubevirt.admission.json_fields import obj, text
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.admission.state import ClusterStateError
from kubevirt.virt_api.webhooks.requests import Admit, VMIPatcher, WebhookContext, guarded
from kubevirt_api.core.v1.constants import DOMAIN_ANNOTATION


def admitter(ctx: WebhookContext, patch_vmi: VMIPatcher | None = None) -> Admit:
    """``patch_vmi`` marks a VMI for evacuation; without one, marking is reported as a failure."""

    def admit(request: AdmissionRequest) -> AdmissionResponse:
        try:
            pod = ctx.state.get_pod(request.namespace, request.name)
        except ClusterStateError:
            # Like KubeVirt: a pod that cannot be read is not protected (its PDB still applies).
            return response.allowed()
        if pod is None or is_completed(pod):
            return response.allowed()
        vmi = None
        vmi_name = obj(obj(pod, "metadata"), "annotations").get(DOMAIN_ANNOTATION)
        if isinstance(vmi_name, str) and vmi_name:
            try:
                vmi = ctx.state.get_vmi(request.namespace, vmi_name)
            except ClusterStateError as err:
                return response.too_many_requests(f"kubevirt failed getting the vmi: {err}")
        decision = decide_eviction(pod, vmi, ctx.config)
        if decision.vmi_patch is not None and not request.dry_run:
            if patch_vmi is None:
                return response.too_many_requests(
                    "kubevirt failed marking the vmi for eviction: no API client"
                )
            try:
                patch_vmi(
                    text(obj(pod, "metadata"), "namespace") or request.namespace,
                    decision.vmi_name,
                    decision.vmi_patch,
                )
            except ClusterStateError as err:
                return response.too_many_requests(f"kubevirt failed marking the vmi for eviction: {err}")
        return decision.response

    return guarded(admit)
