"""The instance type, then the preference, applied to a VMI spec (KubeVirt's ``ApplyToVMI``)."""

from __future__ import annotations

from kubevirt.defaults.vmi import set_default_network_interface, set_default_volume_disks
from kubevirt.instancetype.annotations import set_name_annotations
from kubevirt.instancetype.conflict import Conflict
from kubevirt.instancetype.instancetype_apply import apply_instancetype
from kubevirt.instancetype.preference_apply import apply_device_preferences, apply_preference
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceSpec
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec
from kubevirt_api.k8s import meta_v1

__all__ = ["apply_to_vmi", "expand_vmi"]


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


def expand_vmi(
    vm: VirtualMachine,
    instancetype: VirtualMachineInstancetypeSpec | None,
    preference: VirtualMachinePreferenceSpec | None,
    spec: VirtualMachineInstanceSpec,
    metadata: meta_v1.ObjectMeta,
    cluster: ClusterConfig | None = None,
) -> list[Conflict]:
    """What virt-controller does to a VMI it builds from ``vm``, in KubeVirt's order: the device
    preferences first (they decide which devices get attached), the default disks and pod network
    interface (so the preference shapes them too), the name annotations, then the instance type and
    preference with conflicts reported under ``spec``. Raises :class:`DefaultingError` when the
    cluster forbids the default interface."""
    if instancetype is None and preference is None:
        return []
    if preference is not None:
        apply_device_preferences(preference, spec)
    set_default_volume_disks(spec)
    set_default_network_interface(spec, cluster or ClusterConfig())
    set_name_annotations(vm, metadata)
    return apply_to_vmi("spec", instancetype, preference, spec, metadata)
