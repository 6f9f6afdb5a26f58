"""``<cpu>`` and ``<vcpu>``/``<vcpus>``: the CPU model, topology, features and guest NUMA cells."""

from __future__ import annotations

from .xmlmodel import XMLElement, attr, child, children, element, text, text_child


@element("feature")
class CPUFeature(XMLElement):
    name: str | None = attr()
    policy: str | None = attr()


@element("topology")
class CPUTopology(XMLElement):
    sockets: int | None = attr(as_type=int)
    cores: int | None = attr(as_type=int)
    threads: int | None = attr(as_type=int)


@element("cell")
class NUMACell(XMLElement):
    id: str | None = attr(go="ID")
    cpus: str | None = attr(go="CPUs")
    memory: int | None = attr(as_type=int)
    unit: str | None = attr()
    mem_access: str | None = attr("memAccess", go="MemoryAccess")


@element("numa")
class NUMA(XMLElement):
    cells: list[NUMACell] = children(NUMACell)


@element("cpu")
class CPU(XMLElement):
    mode: str | None = attr()
    model: str | None = text_child()
    features: list[CPUFeature] = children(CPUFeature)
    topology: CPUTopology | None = child(CPUTopology)
    numa: NUMA | None = child(NUMA, go="NUMA")


@element("vcpu")
class VCPU(XMLElement):
    placement: str | None = attr()
    cpus: int | None = text(as_type=int, go="CPUs")


@element("vcpu")
class VCPUsVCPU(XMLElement):
    id: int | None = attr(as_type=int, go="ID")
    enabled: str | None = attr()
    hotpluggable: str | None = attr()
    order: int | None = attr(as_type=int)


@element("vcpus")
class VCPUs(XMLElement):
    vcpus: list[VCPUsVCPU] = children(VCPUsVCPU, go="VCPU")
