"""The VMI update admitter (``vmi-update-admitter.go``).

Users may not change a VMI's spec nor KubeVirt's reserved labels. KubeVirt's own service accounts may
(their changes come through the subresources), except for the hotplug limits (``maxSockets``,
``maxGuest``); with the NodeRestriction gate a virt-handler only touches VMIs on its own node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubevirt.admission import causes as c
from kubevirt.admission import response
from kubevirt.admission._json import JSON, obj, string_map, text
from kubevirt.admission.config import ClusterConfig
from kubevirt.admission.field import Path
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.vmi_spec import RESERVED_LABELS

NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"


def _reserved(labels: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k in RESERVED_LABELS}


def _hotplug_causes(new_spec: JSON, old_spec: JSON) -> list[c.StatusCause]:
    out: list[c.StatusCause] = []
    new_cpu, old_cpu = obj(obj(new_spec, "domain"), "cpu"), obj(obj(old_spec, "domain"), "cpu")
    if new_cpu.get("maxSockets") != old_cpu.get("maxSockets"):
        out.append(c.invalid(Path("spec", "domain", "cpu", "maxSockets"), "CPU topology maxSockets changed"))
    new_mem, old_mem = obj(obj(new_spec, "domain"), "memory"), obj(obj(old_spec, "domain"), "memory")
    if new_mem.get("maxGuest") != old_mem.get("maxGuest"):
        out.append(c.invalid(Path("spec", "domain", "memory", "maxGuest"), "Memory maxGuest changed"))
    return out


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
            causes = _hotplug_causes(new_spec, old_spec)
            if causes:
                return response.invalid(causes)
        return response.allowed()
    if new_spec != old_spec:
        return response.invalid([c.not_supported("", "update of VMI object is restricted")])
    old_labels = _reserved(string_map(obj(old, "metadata"), "labels"))
    new_labels = _reserved(string_map(obj(new, "metadata"), "labels"))
    if old_labels != new_labels:
        message = "modification of the following reserved kubevirt.io/ labels on a VMI object is prohibited"
        return response.invalid([c.not_supported(Path("metadata", "labels"), message)])
    return response.allowed()
