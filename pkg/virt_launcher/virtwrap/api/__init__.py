"""The libvirt domain model (``virtwrap/api`` in KubeVirt): declared once, written and read with lxml.

Element and attribute order follow KubeVirt's ``virtwrap/api/schema.go`` (not libvirt's own order), so
the XML written matches KubeVirt's byte for byte up to the empty elements libvirt rejects. Only what
the converter emits or a component reads is modelled; everything else is ignored when parsing. One
module per area of the domain, one per device kind under ``devices/``; every element class is
importable from here.
"""

from .clock import Clock, Timer
from .common import USER_ALIAS_PREFIX, Address, Alias, BootOrder, Model
from .cpu import CPU, NUMA, VCPU, CPUFeature, CPUTopology, NUMACell, VCPUs, VCPUsVCPU
from .devices import Devices
from .devices.char import (
    Channel,
    ChannelSource,
    ChannelTarget,
    Console,
    ConsoleSource,
    ConsoleTarget,
    Serial,
    SerialLog,
    SerialSource,
    SerialTarget,
)
from .devices.controller import Controller, ControllerDriver
from .devices.disk import (
    BackingStore,
    BackingStoreFormat,
    BlockIO,
    Disk,
    DiskDriver,
    DiskIOThread,
    DiskIOThreads,
    DiskSource,
    DiskSourceHost,
    DiskTarget,
    ReadOnly,
    Reservations,
    Shareable,
    SourceReservations,
)
from .devices.filesystem import FilesystemDevice, FilesystemDriver, FilesystemSource, FilesystemTarget
from .devices.graphics import Graphics, GraphicsListen
from .devices.hostdev import HostDevice, HostDeviceSource
from .devices.input import Input
from .devices.interface import (
    ACPI,
    MAC,
    MTU,
    FilterRef,
    Interface,
    InterfaceBackend,
    InterfaceDriver,
    InterfaceSource,
    InterfaceTarget,
    LinkState,
    Rom,
)
from .devices.memballoon import IOMMUDriver, MemBalloon, Stats
from .devices.memory import MemoryAddress, MemoryDevice, MemoryTarget
from .devices.panic import PanicDevice
from .devices.redirdev import RedirectedDevice, RedirectedDeviceSource
from .devices.rng import Rng, RngBackend
from .devices.sound import SoundCard
from .devices.tpm import TPM, TPMBackend
from .devices.video import Video, VideoModel
from .devices.vsock import CID, VSOCK
from .devices.watchdog import Watchdog
from .domain import Domain, LaunchSecurity, Resource
from .features import (
    FeatureEnabled,
    FeatureHyperv,
    FeatureKVM,
    Features,
    FeatureSpinlocks,
    FeatureState,
    FeatureVendorID,
    SyNICTimer,
)
from .guest_os import BIOS, OS, OSACPI, ACPITable, Boot, BootMenu, Loader, NVRam, OSType, SMBios
from .memory import (
    CurrentMemory,
    HugePage,
    HugePages,
    MaxMemory,
    Memory,
    MemoryAllocation,
    MemoryBacking,
    MemoryBackingAccess,
    MemoryBackingSource,
    NoSharePages,
)
from .metadata import (
    AccessCredentialMetadata,
    GracePeriodMetadata,
    KubeVirtMetadata,
    MemoryDumpMetadata,
    Metadata,
    MigrationMetadata,
)
from .qemu import Commandline, QEMUArg, QEMUEnv
from .sysinfo import Entry, SysInfo
from .tuning import (
    CPUEmulatorPin,
    CPUTune,
    CPUTuneIOThreadPin,
    CPUTuneVCPUPin,
    IOThreads,
    MemNode,
    NUMATune,
    NumaTuneMemory,
)
from .xmlmodel import KUBEVIRT_NS, XMLElement, XMLModelError

__all__ = [
    "ACPI",
    "BIOS",
    "CID",
    "CPU",
    "KUBEVIRT_NS",
    "MAC",
    "MTU",
    "NUMA",
    "OS",
    "OSACPI",
    "TPM",
    "USER_ALIAS_PREFIX",
    "VCPU",
    "VSOCK",
    "ACPITable",
    "AccessCredentialMetadata",
    "Address",
    "Alias",
    "BackingStore",
    "BackingStoreFormat",
    "BlockIO",
    "Boot",
    "BootMenu",
    "BootOrder",
    "CPUEmulatorPin",
    "CPUFeature",
    "CPUTopology",
    "CPUTune",
    "CPUTuneIOThreadPin",
    "CPUTuneVCPUPin",
    "Channel",
    "ChannelSource",
    "ChannelTarget",
    "Clock",
    "Commandline",
    "Console",
    "ConsoleSource",
    "ConsoleTarget",
    "Controller",
    "ControllerDriver",
    "CurrentMemory",
    "Devices",
    "Disk",
    "DiskDriver",
    "DiskIOThread",
    "DiskIOThreads",
    "DiskSource",
    "DiskSourceHost",
    "DiskTarget",
    "Domain",
    "Entry",
    "FeatureEnabled",
    "FeatureHyperv",
    "FeatureKVM",
    "FeatureSpinlocks",
    "FeatureState",
    "FeatureVendorID",
    "Features",
    "FilesystemDevice",
    "FilesystemDriver",
    "FilesystemSource",
    "FilesystemTarget",
    "FilterRef",
    "GracePeriodMetadata",
    "Graphics",
    "GraphicsListen",
    "HostDevice",
    "HostDeviceSource",
    "HugePage",
    "HugePages",
    "IOMMUDriver",
    "IOThreads",
    "Input",
    "Interface",
    "InterfaceBackend",
    "InterfaceDriver",
    "InterfaceSource",
    "InterfaceTarget",
    "KubeVirtMetadata",
    "LaunchSecurity",
    "LinkState",
    "Loader",
    "MaxMemory",
    "MemBalloon",
    "MemNode",
    "Memory",
    "MemoryAddress",
    "MemoryAllocation",
    "MemoryBacking",
    "MemoryBackingAccess",
    "MemoryBackingSource",
    "MemoryDevice",
    "MemoryDumpMetadata",
    "MemoryTarget",
    "Metadata",
    "MigrationMetadata",
    "Model",
    "NUMACell",
    "NUMATune",
    "NVRam",
    "NoSharePages",
    "NumaTuneMemory",
    "OSType",
    "PanicDevice",
    "QEMUArg",
    "QEMUEnv",
    "ReadOnly",
    "RedirectedDevice",
    "RedirectedDeviceSource",
    "Reservations",
    "Resource",
    "Rng",
    "RngBackend",
    "Rom",
    "SMBios",
    "Serial",
    "SerialLog",
    "SerialSource",
    "SerialTarget",
    "Shareable",
    "SoundCard",
    "SourceReservations",
    "Stats",
    "SyNICTimer",
    "SysInfo",
    "TPMBackend",
    "Timer",
    "VCPUs",
    "VCPUsVCPU",
    "Video",
    "VideoModel",
    "Watchdog",
    "XMLElement",
    "XMLModelError",
]
