"""What KubeVirt's mutating webhooks add beyond the spec defaults (``vmi-mutator.go``, ``vm-mutator.go``)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from kubevirt.admission._json import JSON, text
from kubevirt.admission.config import ClusterConfig

PCI_TOPOLOGY_ANNOTATION = "kubevirt.io/pci-topology-version"
PCI_TOPOLOGY_VERSION = "v3"
VMI_FINALIZER = "foregroundDeleteVirtualMachine"
NON_ROOT_UID = 107
DEFAULT_MACHINE_TYPES = {"amd64": "q35", "arm64": "virt", "s390x": "s390-ccw-virtio", "ppc64le": "pseries"}


def _child(parent: JSON, key: str) -> JSON:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def is_q35(machine_type: str) -> bool:
    return machine_type.startswith(("q35", "pc-q35"))


def finish_vmi_create(vmi: JSON, config: ClusterConfig, *, now: datetime | None = None) -> JSON:
    """The annotation, finalizer and initial status the VMI mutator sets after defaulting."""
    out = copy.deepcopy(vmi)
    metadata = _child(out, "metadata")
    machine_type = text(_child(_child(_child(out, "spec"), "domain"), "machine"), "type")
    if is_q35(machine_type):
        _child(metadata, "annotations")[PCI_TOPOLOGY_ANNOTATION] = PCI_TOPOLOGY_VERSION
    finalizers = metadata.get("finalizers")
    if not isinstance(finalizers, list):
        finalizers = metadata["finalizers"] = []
    if VMI_FINALIZER not in finalizers:
        finalizers.append(VMI_FINALIZER)
    status = _child(out, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"
        stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
        status["phaseTransitionTimestamps"] = [{"phase": "Pending", "phaseTransitionTimestamp": stamp}]
    status["runtimeUser"] = 0 if config.enabled("Root") else NON_ROOT_UID
    return out


def default_vm_object(vm: JSON, config: ClusterConfig) -> JSON:
    """The VM mutator's own defaults: the template's architecture and machine type."""
    out = copy.deepcopy(vm)
    template_spec = _child(_child(_child(out, "spec"), "template"), "spec")
    architecture = text(template_spec, "architecture") or config.default_architecture
    template_spec["architecture"] = architecture
    machine = _child(_child(template_spec, "domain"), "machine")
    if not text(machine, "type") and architecture in DEFAULT_MACHINE_TYPES:
        machine["type"] = DEFAULT_MACHINE_TYPES[architecture]
    return out
