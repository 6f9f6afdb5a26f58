"""The instance type, then the preference, applied to a VMI spec (KubeVirt's ``ApplyToVMI``)."""

from __future__ import annotations

from kubevirt.instancetype.conflict import Conflict
from kubevirt.instancetype.instancetype_apply import apply_instancetype
from kubevirt.instancetype.preference_apply import apply_preference
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceSpec
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec
from kubevirt_api.k8s import meta_v1

__all__ = ["apply_to_vmi"]


def apply_to_vmi(
    base: str,
    instancetype: VirtualMachineInstancetypeSpec | None,
    preference: VirtualMachinePreferenceSpec | None,
    spec: VirtualMachineInstanceSpec,
    metadata: meta_v1.ObjectMeta,
) -> list[Conflict]:
    """Changes ``spec``/``metadata`` in place; conflicts are reported at ``base`` (``spec.template.spec``
    for a VM, ``spec`` for a VMI). With conflicts the preference is not applied and the spec is left
    partly changed, so callers apply to a copy."""
    if instancetype is None and preference is None:
        return []
    if instancetype is not None:
        conflicts = apply_instancetype(base, instancetype, preference, spec, metadata)
        if conflicts:
            return conflicts
    if preference is not None:
        apply_preference(preference, spec, metadata)
    return []
