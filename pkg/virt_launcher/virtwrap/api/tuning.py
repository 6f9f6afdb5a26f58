"""Placement and tuning: vCPU, IO thread and emulator pinning, NUMA memory tuning, IO threads."""

from __future__ import annotations

from .xmlmodel import XMLElement, attr, child, children, element, text


@element("vcpupin")
class CPUTuneVCPUPin(XMLElement):
    vcpu: int | None = attr(as_type=int, go="VCPU")
    cpuset: str | None = attr(go="CPUSet")


@element("iothreadpin")
class CPUTuneIOThreadPin(XMLElement):
    iothread: int | None = attr(as_type=int, go="IOThread")
    cpuset: str | None = attr(go="CPUSet")


@element("emulatorpin")
class CPUEmulatorPin(XMLElement):
    cpuset: str | None = attr(go="CPUSet")


@element("cputune")
class CPUTune(XMLElement):
    vcpupin: list[CPUTuneVCPUPin] = children(CPUTuneVCPUPin, go="VCPUPin")
    iothreadpin: list[CPUTuneIOThreadPin] = children(CPUTuneIOThreadPin, go="IOThreadPin")
    emulatorpin: CPUEmulatorPin | None = child(CPUEmulatorPin, go="EmulatorPin")


@element("memory")
class NumaTuneMemory(XMLElement):
    mode: str | None = attr()
    nodeset: str | None = attr(go="NodeSet")


@element("memnode")
class MemNode(XMLElement):
    cellid: int | None = attr(as_type=int, go="CellID")
    mode: str | None = attr()
    nodeset: str | None = attr(go="NodeSet")


@element("numatune")
class NUMATune(XMLElement):
    memory: NumaTuneMemory | None = child(NumaTuneMemory, go_pointer=False)
    memnodes: list[MemNode] = children(MemNode, go="MemNodes")


@element("iothreads")
class IOThreads(XMLElement):
    count: int | None = text(as_type=int, go="IOThreads")
