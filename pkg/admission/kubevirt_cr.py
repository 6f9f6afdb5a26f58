"""virt-operator's KubeVirt CR admitters (create, update, delete)."""

from __future__ import annotations

from kubevirt.admission import causes as c
from kubevirt.admission import response
from kubevirt.admission._json import JSON, items, obj, text
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.response import AdmissionResponse

WORKLOAD_UPDATE_METHODS = ("LiveMigrate", "Evict")
PATCH_TYPES = ("json", "merge", "strategic")
UNINSTALL_STRATEGIES = ("RemoveWorkloads", "BlockUninstallIfWorkloadsExist")


def admit_kubevirt_create(existing: int) -> AdmissionResponse:
    """Only one KubeVirt CR may exist."""
    if existing > 0:
        return response.error("Kubevirt is already created")
    return response.allowed()


def validate_kubevirt_spec(kubevirt: JSON) -> list[StatusCause]:
    spec = obj(kubevirt, "spec")
    field = Path("spec")
    out: list[StatusCause] = []
    strategy = spec.get("uninstallStrategy")
    if strategy is not None and strategy not in UNINSTALL_STRATEGIES:
        out.append(
            c.invalid(field.child("uninstallStrategy"), f"uninstallStrategy {strategy} is not supported")
        )
    updates = obj(spec, "workloadUpdateStrategy")
    for i, method in enumerate(updates.get("workloadUpdateMethods") or []):
        if method not in WORKLOAD_UPDATE_METHODS:
            where = field.child("workloadUpdateStrategy", "workloadUpdateMethods").index(i)
            out.append(c.not_supported(where, f"workloadUpdateMethod {method} is not supported"))
    for i, patch in enumerate(items(obj(spec, "customizeComponents"), "patches")):
        where = field.child("customizeComponents", "patches").index(i)
        if text(patch, "type") not in PATCH_TYPES:
            out.append(c.invalid(where.child("type"), f"patch type {text(patch, 'type')} is not supported"))
        if not text(patch, "resourceName") or not text(patch, "resourceType") or not text(patch, "patch"):
            out.append(c.required(where, "resourceName, resourceType and patch must be set"))
    return out


def admit_kubevirt_update(kubevirt: JSON) -> AdmissionResponse:
    return response.from_causes(validate_kubevirt_spec(kubevirt))


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
