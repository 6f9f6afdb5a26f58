"""The defaulting the webhooks apply before validating, as :mod:`.pipeline` callables.

The VMI mutator's defaulting is :func:`kubevirt.defaults.set_vmi_defaults`. A VM's validating webhook
defaults a copy of the VM's template the same way (``SetDefaultVirtualMachine``), except for the CPU and
memory hotplug limits, which the VM controller only sets on the VMIs it creates.
"""

from __future__ import annotations

import dataclasses

from kubevirt.defaults import DefaultingError, set_vmi_defaults
from kubevirt.virt_config import ROLLOUT_STAGE, ClusterConfig
from kubevirt_api.core.v1.defaults import set_object_defaults_virtual_machine
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.core.v1.vmi import VirtualMachineInstance

__all__ = ["DefaultingError", "vm_defaults", "vmi_defaults"]


def vmi_defaults(vmi: VirtualMachineInstance, config: ClusterConfig) -> None:
    set_vmi_defaults(vmi, config)


def vm_defaults(vm: VirtualMachine, config: ClusterConfig) -> None:
    template = vm.spec.template
    if template is None or template.spec is None:
        set_object_defaults_virtual_machine(vm)
        return
    scratch = VirtualMachineInstance.from_dict(
        {
            "metadata": template.metadata.to_dict() if template.metadata else {},
            "spec": template.spec.to_dict(),
        }
    )
    set_vmi_defaults(scratch, dataclasses.replace(config, rollout_strategy=ROLLOUT_STAGE))
    template.spec = scratch.spec
    set_object_defaults_virtual_machine(vm)
