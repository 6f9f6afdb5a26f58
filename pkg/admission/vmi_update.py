"""The VMI update admitter (``vmi-update-admitter.go``).

Users may not change a VMI's spec nor KubeVirt's reserved labels. KubeVirt's own service accounts may
(their changes come through the subresources), except for the hotplug limits (``maxSockets``,
``maxGuest``); with the NodeRestriction gate a virt-handler only touches VMIs on its own node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubevirt.admission import causes as c
from kubevirt.admission import response
from kubevirt.admission.json_fields import has, integer, obj, string_map, text
from kubevirt.admission.quantity import parse_or_zero
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.vmi_spec import RESERVED_LABELS
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON

NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"


def _reserved(labels: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k in RESERVED_LABELS}


def _hotplug_cause(new_spec: JSON, old_spec: JSON) -> c.StatusCause | None:
    """KubeVirt's CPU and memory hotplug limits: the first one changed, as a cause without a field."""
    new_cpu, old_cpu = obj(obj(new_spec, "domain"), "cpu"), obj(obj(old_spec, "domain"), "cpu")
    # Go reads an absent maxSockets as 0.
    if integer(new_cpu, "maxSockets") != integer(old_cpu, "maxSockets"):
        return c.invalid("", "CPU topology maxSockets changed")
    new_mem, old_mem = obj(obj(new_spec, "domain"), "memory"), obj(obj(old_spec, "domain"), "memory")
    # Only a maxGuest set on both sides is compared, by value ("1Gi" equals "1024Mi").
    both = has(new_mem, "maxGuest") and has(old_mem, "maxGuest")
    if both and parse_or_zero(new_mem["maxGuest"]) != parse_or_zero(old_mem["maxGuest"]):
        return c.invalid("", "Memory maxGuest changed")
    return None


def admit_vmi_update(
    new: JSON,
    old: JSON,
    config: ClusterConfig,
    *,
    username: str,
    extra: Mapping[str, Sequence[str]] | None = None,
) -> AdmissionResponse:
    kubevirt_account = username in config.kubevirt_service_accounts
    new_spec, old_spec = obj(new, "spec"), obj(old, "spec")
    if kubevirt_account:
        handler = f"system:serviceaccount:{config.install_namespace}:kubevirt-handler"
        if username == handler and config.enabled("NodeRestriction"):
            nodes = list((extra or {}).get(NODE_NAME_EXTRA, []))
            if not nodes:
                message = "Node restriction failed, virt-handler service account is missing node name"
                return response.invalid([c.invalid("", message)])
            old_status = obj(old, "status")
            source = text(old_status, "nodeName")
            target = text(obj(old_status, "migrationState"), "targetNode")
            if nodes[0] != source and (not target or nodes[0] != target):
                message = "Node restriction, virt-handler is only allowed to modify VMIs it owns"
                return response.invalid([c.invalid("", message)])
            if not target and text(obj(obj(new, "status"), "migrationState"), "targetNode"):
                message = "Node restriction, virt-handler is not allowed to set target node"
                return response.invalid([c.invalid("", message)])
        if new_spec != old_spec:
            cause = _hotplug_cause(new_spec, old_spec)
            if cause is not None:
                return response.invalid([cause])
        return response.allowed()
    if new_spec != old_spec:
        return response.invalid([c.not_supported("", "update of VMI object is restricted")])
    old_labels = _reserved(string_map(obj(old, "metadata"), "labels"))
    new_labels = _reserved(string_map(obj(new, "metadata"), "labels"))
    if old_labels != new_labels:
        message = "modification of the following reserved kubevirt.io/ labels on a VMI object is prohibited"
        return response.invalid([c.not_supported("", message)])
    return response.allowed()
