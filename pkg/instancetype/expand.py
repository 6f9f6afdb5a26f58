"""A VM with its instance type and preference written into its template (KubeVirt's ``Expand``).

What ``expand-vm-spec`` and ``virtctl expand`` answer: the template gets the default disks and pod
network, the instance type's and preference's fields, then the VMI spec defaults; the matchers and
their status references are dropped, so the result stands on its own.
"""

from __future__ import annotations

from kubevirt.defaults.vmi import (
    DefaultingError,
    set_default_network_interface,
    set_default_vmi_spec,
    set_default_volume_disks,
)
from kubevirt.instancetype.apply import apply_to_vmi
from kubevirt.instancetype.conflict import conflicts_message
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec
from kubevirt_api.k8s.meta_v1 import ObjectMeta

__all__ = ["ExpandError", "expand_vm"]


class ExpandError(ValueError):
    """The VM cannot be expanded: its template conflicts with the instance type, or defaulting failed."""


def expand_vm(
    vm: VirtualMachine,
    instancetype: VirtualMachineInstancetypeSpec | None,
    preference: VirtualMachinePreferenceSpec | None,
    cluster: ClusterConfig,
) -> VirtualMachine:
    """The expanded copy of ``vm``; ``vm`` itself is returned unchanged when it selects nothing."""
    if vm.spec.instancetype is None and vm.spec.preference is None:
        return vm
    expanded = vm.model_copy(deep=True)
    template = expanded.spec.template
    if template.spec is None:
        raise ExpandError("spec.template.spec: required")
    try:
        set_default_volume_disks(template.spec)
        set_default_network_interface(template.spec, cluster)
        template.metadata = template.metadata or ObjectMeta()
        conflicts = apply_to_vmi(
            "spec.template.spec", instancetype, preference, template.spec, template.metadata
        )
        if conflicts:
            raise ExpandError(conflicts_message(conflicts))
        set_default_vmi_spec(template.spec, cluster)
    except DefaultingError as err:
        raise ExpandError(err.message) from None
    expanded.spec.instancetype = None
    expanded.spec.preference = None
    if expanded.status is not None:
        expanded.status.instancetype_ref = None
        expanded.status.preference_ref = None
    return expanded
