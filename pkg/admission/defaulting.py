"""The defaulting the webhooks apply before validating, as :mod:`.pipeline` callables.

Today this is the API-level defaulting (``SetObjectDefaults_*``); the cluster-aware part
(``SetDefaultVirtualMachineInstance``: machine type, topology, buses, networks, hotplug) plugs in here.
"""

from __future__ import annotations

from kubevirt.admission.config import ClusterConfig
from kubevirt_api.core.v1.defaults import (
    set_object_defaults_virtual_machine,
    set_object_defaults_virtual_machine_instance,
)
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.core.v1.vmi import VirtualMachineInstance


def vmi_defaults(vmi: VirtualMachineInstance, _config: ClusterConfig) -> None:
    set_object_defaults_virtual_machine_instance(vmi)


def vm_defaults(vm: VirtualMachine, _config: ClusterConfig) -> None:
    set_object_defaults_virtual_machine(vm)
