"""The converter: an ordered list of configurators, each filling one part of the domain."""

from __future__ import annotations

from kubevirt_api.core.v1 import VirtualMachineInstance

from .. import api
from .clock import configure_clock
from .context import ConverterContext
from .conversion import Configurator, Conversion
from .cpu import configure_cpu, configure_dedicated_cpus
from .devices import (
    configure_channels,
    configure_controllers,
    configure_filesystems,
    configure_graphics,
    configure_inputs,
    configure_memballoon,
    configure_panic_devices,
    configure_rng,
    configure_serial_console,
    configure_sound,
    configure_tpm,
    configure_usb_redirection,
    configure_vsock,
    configure_watchdog,
)
from .disks import configure_disks, configure_iothreads
from .features import configure_features
from .firmware import configure_os, configure_sysinfo
from .interfaces import configure_interfaces
from .memory import configure_memory, configure_memory_backing
from .qemu_cmd import configure_qemu_commandline

# Order matters where one step reads what another wrote: hugepage NUMA cells need the vCPU count,
# the SCSI controller must exist before IO threads are assigned, controllers look at the disks,
# dedicated CPUs add a hint to the features.
CONFIGURATORS: tuple[Configurator, ...] = (
    configure_memory,
    configure_cpu,
    configure_memory_backing,
    configure_os,
    configure_sysinfo,
    configure_interfaces,
    configure_channels,
    configure_disks,
    configure_controllers,
    configure_iothreads,
    configure_graphics,
    configure_memballoon,
    configure_inputs,
    configure_serial_console,
    configure_rng,
    configure_watchdog,
    configure_sound,
    configure_tpm,
    configure_vsock,
    configure_panic_devices,
    configure_usb_redirection,
    configure_filesystems,
    configure_clock,
    configure_features,
    configure_dedicated_cpus,
    configure_qemu_commandline,
)


def convert_vmi_to_domain(
    vmi: VirtualMachineInstance,
    context: ConverterContext | None = None,
    *,
    configurators: tuple[Configurator, ...] = CONFIGURATORS,
) -> api.Domain:
    """The libvirt domain for a defaulted VMI. Raises :class:`ConversionError` naming the VMI field.

    ``configurators`` run in order; virt-launcher adds its own after :data:`CONFIGURATORS`."""
    conversion = Conversion(vmi, context or ConverterContext())
    for configure in configurators:
        configure(conversion)
    return conversion.domain
