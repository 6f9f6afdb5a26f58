"""The ``<domain>`` root element, and the few elements only it holds."""

from __future__ import annotations

from .clock import Clock
from .cpu import CPU, VCPU, VCPUs
from .devices import Devices
from .features import Features
from .guest_os import OS
from .memory import CurrentMemory, MaxMemory, Memory, MemoryBacking
from .metadata import Metadata
from .qemu import Commandline
from .sysinfo import SysInfo
from .tuning import CPUTune, IOThreads, NUMATune
from .xmlmodel import QEMU_NS, XMLElement, attr, child, element, text_child


@element("resource")
class Resource(XMLElement):
    partition: str | None = text_child()


@element("launchSecurity")
class LaunchSecurity(XMLElement):
    type: str | None = attr()
    dh_cert: str | None = text_child("dhCert", go="DHCert")
    session: str | None = text_child()
    cbitpos: str | None = text_child()
    reduced_phys_bits: str | None = text_child("reducedPhysBits")
    policy: str | None = text_child()


@element("domain", declare=f' xmlns:qemu="{QEMU_NS}"', go_xml_name=True, go_extra={"XmlNS": ""})
class Domain(XMLElement):
    """``<domain>``: what the converter produces and what is read back from libvirt."""

    type: str | None = attr()
    name: str | None = text_child()
    uuid: str | None = text_child(go="UUID")
    memory: Memory = child(Memory, required=True)
    current_memory: CurrentMemory | None = child(CurrentMemory)
    max_memory: MaxMemory | None = child(MaxMemory)
    memory_backing: MemoryBacking | None = child(MemoryBacking)
    os: OS = child(OS, required=True, go="OS")
    sysinfo: SysInfo | None = child(SysInfo, go="SysInfo")
    devices: Devices = child(Devices, required=True)
    clock: Clock | None = child(Clock)
    resource: Resource | None = child(Resource)
    qemu_commandline: Commandline | None = child(Commandline, go="QEMUCmd", go_unread=True)
    metadata: Metadata = child(Metadata, required=True)
    features: Features | None = child(Features)
    cpu: CPU = child(CPU, required=True, go="CPU")
    vcpu: VCPU | None = child(VCPU, go="VCPU")
    vcpus: VCPUs | None = child(VCPUs, go="VCPUs")
    cputune: CPUTune | None = child(CPUTune, go="CPUTune")
    numatune: NUMATune | None = child(NUMATune, go="NUMATune")
    iothreads: IOThreads | None = child(IOThreads, go="IOThreads")
    launch_security: LaunchSecurity | None = child(LaunchSecurity)
