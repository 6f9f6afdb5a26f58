"""virt-operator's KubeVirt CR admitters (create, update, delete)."""

from __future__ import annotations

from kubevirt.admission import causes as c
from kubevirt.admission import response
from kubevirt.admission.json_fields import obj, text
from kubevirt.admission.response import AdmissionResponse
from kubevirt.virt_config.tls import validate_tls_configuration
from kubevirt_api.view import JSON


def admit_kubevirt_create(existing: int) -> AdmissionResponse:
    """Only one KubeVirt CR may exist."""
    if existing > 0:
        return response.error("Kubevirt is already created")
    return response.allowed()


def admit_kubevirt_update(new: JSON, old: JSON, *, vmi_count: int) -> AdmissionResponse:
    """A changed ``tlsConfiguration`` must be one Go can apply (known cipher names, and ciphers only
    below TLS 1.3); workload placement (where virt-handler runs) may not change while VMIs exist."""
    causes: list[c.StatusCause] = []
    new_tls = obj(obj(new, "spec"), "configuration").get("tlsConfiguration")
    old_tls = obj(obj(old, "spec"), "configuration").get("tlsConfiguration")
    if isinstance(new_tls, dict) and new_tls != old_tls:
        causes += [c.not_supported(where, why) for where, why in validate_tls_configuration(new_tls)]
    if obj(new, "spec").get("workloads") != obj(old, "spec").get("workloads") and vmi_count > 0:
        causes.append(c.not_supported("", "can't placement of workload pods while there are running vms"))
    return response.invalid(causes) if causes else response.allowed()


def admit_kubevirt_delete(kubevirt: JSON, workloads: dict[str, int]) -> AdmissionResponse:
    """With ``BlockUninstallIfWorkloadsExist`` a deployed KubeVirt is kept while workloads remain."""
    spec, status = obj(kubevirt, "spec"), obj(kubevirt, "status")
    if (
        text(spec, "uninstallStrategy") != "BlockUninstallIfWorkloadsExist"
        or text(status, "phase") != "Deployed"
    ):
        return response.allowed()
    for kind, count in workloads.items():
        if count > 0:
            return response.error(
                f"Rejecting the uninstall request, since there are still {kind} present. Either delete all "
                "KubeVirt related workloads or change the uninstall strategy before uninstalling KubeVirt."
            )
    return response.allowed()
