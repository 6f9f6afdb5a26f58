"""Where the virt-launcher pod may run: node selector labels and node affinity.

The selector merges, later keys winning: ``kubevirt.io/schedulable``, the architecture, the cluster's
node selectors, the VMI's; then the labels the node labeller publishes for what the VMI needs (dedicated
CPUs, CPU model and required features, machine type, TSC frequency, realtime, SEV, Secure Execution and,
with HypervStrictCheck, Hyper-V features).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubevirt.virt_controller.services import vmi_facts
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.constants import (
    CPU_FEATURE_LABEL,
    CPU_MANAGER,
    CPU_MODE_HOST_MODEL,
    CPU_MODE_HOST_PASSTHROUGH,
    CPU_MODEL_LABEL,
    CPU_MODEL_VENDOR_LABEL,
    HYPERV_LABEL,
    NODE_HOST_MODEL_IS_OBSOLETE_LABEL,
    NODE_SCHEDULABLE,
    REALTIME_LABEL,
    SECURE_EXECUTION_LABEL,
    SEV_LABEL,
    SEVES_LABEL,
    SUPPORTED_MACHINE_TYPE_LABEL,
)
from kubevirt_api.core.v1.domain import FeatureHyperv

ARCH_LABEL = "kubernetes.io/arch"
TSC_FREQUENCY_LABEL = "scheduling.node.kubevirt.io/tsc-frequency"
INTEL_VENDOR = "Intel"
# Hyper-V enlightenments the node labeller reports, in KubeVirt's order.
_HYPERV_LABELS = (
    "vpindex",
    "runtime",
    "reset",
    "synic",
    "synictimer",
    "frequencies",
    "reenlightenment",
    "tlbflush",
    "ipi",
)


def node_selector(
    vmi: VirtualMachineInstance, cluster_node_selectors: Mapping[str, str], *, hyperv_strict: bool
) -> dict[str, str]:
    selector = {NODE_SCHEDULABLE: "true"}
    if vmi.spec.architecture:
        selector[ARCH_LABEL] = vmi.spec.architecture.lower()
    selector.update(cluster_node_selectors)
    selector.update(vmi.spec.node_selector or {})
    required = _required_labels(vmi, hyperv_strict)
    selector.update(required)
    return selector


def _required_labels(vmi: VirtualMachineInstance, hyperv_strict: bool) -> dict[str, str]:
    labels: dict[str, str] = {}
    if vmi.is_cpu_dedicated():
        labels[CPU_MANAGER] = "true"
    if hyperv_strict:
        labels.update(_hyperv_labels(vmi))
    cpu = vmi.spec.domain.cpu
    if cpu is not None and cpu.model and cpu.model not in (CPU_MODE_HOST_MODEL, CPU_MODE_HOST_PASSTHROUGH):
        labels[CPU_MODEL_LABEL + cpu.model] = "true"
    machine = _machine_type(vmi)
    if machine:
        labels[SUPPORTED_MACHINE_TYPE_LABEL + machine] = "true"
    if cpu is not None and cpu.model:
        for feature in cpu.features or []:
            if feature.policy in (None, "", "require"):
                labels[CPU_FEATURE_LABEL + feature.name] = "true"
    frequency = _manual_tsc_frequency(vmi)
    if frequency is not None:
        labels[f"{TSC_FREQUENCY_LABEL}-{frequency}"] = "true"
    if vmi.is_realtime_enabled():
        labels[REALTIME_LABEL] = "true"
    if vmi_facts.is_sev(vmi):
        labels[SEV_LABEL] = "true"
    if vmi_facts.is_sev_es(vmi):
        labels[SEVES_LABEL] = "true"
    if vmi_facts.is_secure_execution(vmi):
        labels[SECURE_EXECUTION_LABEL] = "true"
    return labels


def _machine_type(vmi: VirtualMachineInstance) -> str:
    status_machine = vmi.status.machine if vmi.status is not None else None
    if status_machine is not None and status_machine.type:
        return status_machine.type
    machine = vmi.spec.domain.machine
    return (machine.type if machine is not None else None) or ""


def _hyperv_labels(vmi: VirtualMachineInstance) -> dict[str, str]:
    features = vmi.spec.domain.features
    hyperv: FeatureHyperv | None = features.hyperv if features is not None else None
    if hyperv is None:
        return {}
    labels: dict[str, str] = {}
    for name in _HYPERV_LABELS:
        state = getattr(hyperv, name)
        if state is not None and state.enabled is True:
            labels[HYPERV_LABEL + name] = "true"
    if hyperv.evmcs is not None and hyperv.evmcs.enabled is not False:
        labels[CPU_MODEL_VENDOR_LABEL + INTEL_VENDOR] = "true"
    return labels


def _manual_tsc_frequency(vmi: VirtualMachineInstance) -> int | None:
    """The TSC frequency to pin when the guest needs a stable one and the cluster reported it."""
    hints = vmi.status.topology_hints if vmi.status is not None else None
    frequency = hints.tsc_frequency if hints is not None else None
    if frequency is None or frequency <= 0:
        return None
    cpu = vmi.spec.domain.cpu
    invtsc = cpu is not None and any(
        f.name == "invtsc" and f.policy in ("require", "force") for f in cpu.features or []
    )
    features = vmi.spec.domain.features
    hyperv = features.hyperv if features is not None else None
    reenlightenment = (
        hyperv is not None and hyperv.reenlightenment is not None and hyperv.reenlightenment.enabled is True
    )
    return frequency if invtsc or reenlightenment else None


def affinity(vmi: VirtualMachineInstance) -> dict[str, Any] | None:
    """The VMI's affinity, plus: keep a host-model CPU off nodes whose host model is obsolete, and keep
    forbidden CPU features off nodes that have them."""
    result = copy.deepcopy(vmi.spec.affinity.to_dict()) if vmi.spec.affinity is not None else None
    cpu = vmi.spec.domain.cpu
    if cpu is None or not cpu.model or cpu.model == CPU_MODE_HOST_MODEL:
        result = _reject_label(result, NODE_HOST_MODEL_IS_OBSOLETE_LABEL)
    for feature in (cpu.features if cpu is not None else None) or []:
        if feature.policy == "forbid":
            result = _reject_label(result, CPU_FEATURE_LABEL + feature.name)
    return result


def _reject_label(current: dict[str, Any] | None, label: str) -> dict[str, Any]:
    requirement = {"key": label, "operator": "DoesNotExist"}
    result = current if current is not None else {}
    node_affinity = result.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": [requirement]}]
        }
        return result
    # Terms are ORed: every term must reject the label.
    for term in required.setdefault("nodeSelectorTerms", []):
        term["matchExpressions"] = [*term.get("matchExpressions", []), dict(requirement)]
    return result
