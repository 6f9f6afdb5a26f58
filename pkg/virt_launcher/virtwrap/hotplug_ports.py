"""Free PCIe root ports reserved when a domain is first defined (KubeVirt's ``allocateHotplugPorts``).

On q35 (and arm64 ``virt``) every hotplugged device needs an empty ``pcie-root-port``, and libvirt adds
root ports only for the devices a definition has (plus one spare). So, as KubeVirt does:

1. the domain is defined with placeholder interfaces, for which libvirt adds and assigns root ports;
2. it is defined again with the devices libvirt returned (addresses and controllers kept) but the VMI's
   own interfaces instead of the placeholders: the placeholders' root ports stay, empty;
3. when more free ports are wanted (KubeVirt's v2 count: by memory size and devices in use), bare
   ``pcie-root-port`` controllers are appended after the highest PCI controller index (at most index 31)
   and the domain is defined a third time.

The domain XML is the converter's, unchanged; this runs at define time, on what libvirt gives back.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import libvirt
from lxml import etree

from kubevirt.libvirt_units import unit_bytes
from kubevirt.virt_launcher.virtwrap.errors import InvalidRequestError
from kubevirt_api.core.v1.constants import PLACE_PCI_DEVICES_ON_ROOT_COMPLEX
from kubevirt_api.view import View, VMIView

# Set by virt-handler on VMs defined with KubeVirt's v2 formula: placeholders + boot-time interfaces,
# frozen so that interfaces added or removed while stopped do not shift PCI addresses.
PCI_INTERFACE_SLOT_COUNT_ANNOTATION = "kubevirt.io/pci-interface-slot-count"

# KubeVirt's v2 sizing: total root ports wanted, and the least that stay free, by guest memory.
HOTPLUG_LARGE_MEMORY_THRESHOLD = 2 * 1024 * 1024 * 1024
HOTPLUG_LARGE_MEMORY_DEFAULT_TOTAL_PORTS = 16
HOTPLUG_LARGE_MEMORY_MIN_REQUIRED_FREE_PORTS = 6
HOTPLUG_DEFAULT_TOTAL_PORTS = 8
HOTPLUG_MIN_REQUIRED_FREE_PORTS = 3
V1_INTERFACE_SLOTS = 4
# Each pcie-root-port takes a function on bus 0; indices above 31 are never added.
MAX_PCI_BUS_INDEX = 31

_INTEGER = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi takes

Define = Callable[[str], libvirt.virDomain]


# -- when and how many ---------------------------------------------------------------------------


def supports_pcie_hotplug(spec: View) -> bool:
    """KubeVirt's ``SupportsPCIeHotplug``: amd64 or arm64 (or unset), and no machine or a q35/virt one."""
    if spec.string("architecture") not in ("amd64", "arm64", ""):
        return False
    machine = spec.object("domain").optional_object("machine")
    if machine is None:
        return True
    machine_type = machine.string("type")
    return "q35" in machine_type or machine_type.startswith("virt")


def _on_root_complex(vmi: VMIView) -> bool:
    return vmi.annotations.get(PLACE_PCI_DEVICES_ON_ROOT_COMPLEX) == "true"


def hotplug_port_count_v1(vmi: VMIView) -> int:
    """KubeVirt's frozen v1 placeholder count: ``max(0, 4 - interfaces)``, none without interfaces."""
    if _on_root_complex(vmi):
        return 0
    interfaces = len(vmi.interfaces())
    if interfaces == 0:
        return 0
    return max(0, V1_INTERFACE_SLOTS - interfaces)


def placeholder_count(vmi: VMIView) -> int:
    """How many placeholder interfaces: from the frozen slot total when the VMI has one, else v1."""
    annotations = vmi.annotations
    if PCI_INTERFACE_SLOT_COUNT_ANNOTATION not in annotations:
        return hotplug_port_count_v1(vmi)
    value = annotations[PCI_INTERFACE_SLOT_COUNT_ANNOTATION]
    if not _INTEGER.fullmatch(value):
        raise InvalidRequestError(
            f"metadata.annotations[{PCI_INTERFACE_SLOT_COUNT_ANNOTATION}]: "
            f"invalid {PCI_INTERFACE_SLOT_COUNT_ANNOTATION} annotation value {value!r}: not an integer"
        )
    return max(0, int(value) - len(vmi.interfaces()))


def hotplug_port_count_v2(vmi: VMIView, domain: etree._Element) -> int:
    """KubeVirt's v2 count of free ports wanted: what is left of 8 (16 above 2 GiB of memory) after the
    converter's PCI devices, and at least 3 (6)."""
    if _on_root_complex(vmi):
        return 0
    total, least = HOTPLUG_DEFAULT_TOTAL_PORTS, HOTPLUG_MIN_REQUIRED_FREE_PORTS
    if memory_bytes(domain) > HOTPLUG_LARGE_MEMORY_THRESHOLD:
        total, least = HOTPLUG_LARGE_MEMORY_DEFAULT_TOTAL_PORTS, HOTPLUG_LARGE_MEMORY_MIN_REQUIRED_FREE_PORTS
    return max(total - count_pci_devices(domain), least)


def extra_controller_count(vmi: VMIView, domain: etree._Element, placeholders: int) -> int:
    """Bare root ports to add beyond the placeholders' (v2's count less the placeholders)."""
    if _on_root_complex(vmi):
        return 0
    return max(0, hotplug_port_count_v2(vmi, domain) - placeholders)


def memory_bytes(domain: etree._Element) -> int:
    """The domain's ``<memory>`` in bytes (the converter writes bytes)."""
    memory = domain.find("memory")
    if memory is None or not (memory.text or "").strip().isdigit():
        return 0
    unit = unit_bytes(memory.get("unit")) or 1024
    return int((memory.text or "").strip()) * unit


def _is_pci_candidate(device: etree._Element) -> bool:
    """A device without an address, or with a PCI (or untyped) one (KubeVirt's ``iteratePCIAddresses``)."""
    address = device.find("address")
    return address is None or address.get("type", "") in ("", "pci")


def count_pci_devices(domain: etree._Element) -> int:
    """KubeVirt's ``CountPCIDevices``: the devices that take, or may be given, a PCI address. Every
    controller counts but the PCI roots (a ``usb`` controller of model ``none`` too, as in KubeVirt)."""
    devices = domain.find("devices")
    if devices is None:
        return 0
    candidates = [
        *devices.iterfind("interface"),
        *(h for h in devices.iterfind("hostdev") if h.get("type") == "pci"),
        *(c for c in devices.iterfind("controller") if c.get("model") not in ("pci-root", "pcie-root")),
        *(d for d in devices.iterfind("disk") if _disk_bus(d) == "virtio"),
        *(i for i in devices.iterfind("input") if i.get("bus") == "virtio"),
        *devices.iterfind("watchdog"),
        # KubeVirt's spec holds one RNG device and one balloon: the last of each in the XML
        *devices.findall("rng")[-1:],
        *devices.findall("memballoon")[-1:],
    ]
    return sum(1 for device in candidates if _is_pci_candidate(device))


def _disk_bus(disk: etree._Element) -> str:
    target = disk.find("target")
    return "" if target is None else target.get("bus", "")


def max_pci_controller_index(domain: etree._Element) -> int:
    """The highest index of the domain's ``pci`` controllers (0 when none has one)."""
    highest = 0
    for controller in _devices(domain).iterfind("controller"):
        index = controller.get("index", "")
        if controller.get("type") == "pci" and _INTEGER.fullmatch(index):
            highest = max(highest, int(index))
    return highest


# -- the domain XML ------------------------------------------------------------------------------


def parse_domain(xml: str) -> etree._Element:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, collect_ids=False)
    return etree.fromstring(xml.encode(), parser)


def to_xml(domain: etree._Element) -> str:
    return etree.tostring(domain, encoding="unicode")


def _devices(domain: etree._Element) -> etree._Element:
    devices = domain.find("devices")
    return devices if devices is not None else etree.SubElement(domain, "devices")


def transitional_model_type(vmi: VMIView) -> str:
    """The virtio model of KubeVirt's placeholders (PCIe architectures only get here)."""
    transitional = vmi.devices.boolean("useVirtioTransitional")
    return "virtio-transitional" if transitional else "virtio-non-transitional"


def placeholder_interface(index: int, model: str) -> etree._Element:
    """KubeVirt's placeholder: an unmanaged ethernet interface, never created (it leaves before start)."""
    interface = etree.Element("interface", type="ethernet")
    etree.SubElement(interface, "source")
    etree.SubElement(interface, "target", dev=f"placeholder-{index}", managed="no")
    etree.SubElement(interface, "model", type=model)
    return interface


def _insert_interfaces(devices: etree._Element, interfaces: list[etree._Element]) -> None:
    """Put ``interfaces`` after the last interface (else after the emulator, else first)."""
    anchors = devices.findall("interface") or devices.findall("emulator")
    position = devices.index(anchors[-1]) + 1 if anchors else 0
    for offset, interface in enumerate(interfaces):
        devices.insert(position + offset, interface)


def with_placeholders(domain: etree._Element, count: int, model: str) -> etree._Element:
    """A copy of ``domain`` with ``count`` placeholder interfaces after its own."""
    placed = copy.deepcopy(domain)
    _insert_interfaces(_devices(placed), [placeholder_interface(index, model) for index in range(count)])
    return placed


def take_devices(domain: etree._Element, defined: etree._Element) -> None:
    """Give ``domain`` the devices libvirt defined (addresses and added controllers included), but its
    own interfaces instead of the ones libvirt has (the placeholders among them). Only the devices are
    taken: libvirt may not give back everything else the converter wrote."""
    own = [copy.deepcopy(interface) for interface in _devices(domain).iterfind("interface")]
    devices = copy.deepcopy(_devices(defined))
    for interface in devices.findall("interface"):
        devices.remove(interface)
    _insert_interfaces(devices, own)
    domain.replace(_devices(domain), devices)


def append_pcie_root_port_controllers(domain: etree._Element, count: int) -> int:
    """Append up to ``count`` bare ``pcie-root-port`` controllers numbered after the highest PCI
    controller index, none above index 31; returns how many."""
    devices = _devices(domain)
    first = max_pci_controller_index(domain) + 1
    indices = [index for index in range(first, first + count) if index <= MAX_PCI_BUS_INDEX]
    for index in indices:
        etree.SubElement(devices, "controller", type="pci", index=str(index), model="pcie-root-port")
    return len(indices)


# -- the defines ---------------------------------------------------------------------------------


def _define_pinned(define: Define, xml: etree._Element, domain: etree._Element) -> libvirt.virDomain:
    """Define ``xml``; a ``domain`` without a UUID takes the one libvirt gave, so that defining it again
    replaces this definition (KubeVirt's domains always have one: libvirt copies the SMBIOS UUID)."""
    dom = define(to_xml(xml))
    if domain.find("uuid") is None:
        name = domain.find("name")
        uuid = etree.Element("uuid")
        uuid.text = dom.UUIDString()
        domain.insert(0 if name is None else domain.index(name) + 1, uuid)
    return dom


def with_network_ifaces_resources(
    define: Define, domain: etree._Element, count: int, model: str
) -> libvirt.virDomain:
    """Define the domain with ``count`` placeholders, read back the devices libvirt gave them and define
    it again without them; ``domain`` is left holding what was defined last (KubeVirt's
    ``withNetworkIfacesResources``)."""
    if count > 0:
        placed = _define_pinned(define, with_placeholders(domain, count, model), domain)
        take_devices(domain, parse_domain(placed.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)))
    return _define_pinned(define, domain, domain)


def allocate_hotplug_ports(define: Define, vmi: VMIView, xml: str, log: Any) -> libvirt.virDomain:
    """Define the converter's ``xml`` for ``vmi`` with KubeVirt's free PCIe root ports; returns the domain.
    Raises :class:`InvalidRequestError` for a bad slot-count annotation before anything is defined."""
    if not supports_pcie_hotplug(vmi.spec):
        log.info(
            "skipping hotplug port allocation: architecture or machine type does not support PCIe topology"
        )
        return define(xml)
    domain = parse_domain(xml)
    placeholders = placeholder_count(vmi)
    extra = extra_controller_count(vmi, domain, placeholders)
    log.info(
        "allocating hotplug ports",
        placeholder_interfaces=placeholders,
        direct_controllers=extra,
        memory_bytes=memory_bytes(domain),
    )
    dom = with_network_ifaces_resources(define, domain, placeholders, transitional_model_type(vmi))
    # Appended only now, above the root ports libvirt gave the placeholders' domain, so that they stay
    # empty. Without placeholders nothing was read back: as in KubeVirt they are numbered from the
    # converter's controllers (from 1), and libvirt places the domain's devices on some of them.
    if extra > 0:
        append_pcie_root_port_controllers(domain, extra)
        dom = define(to_xml(domain))
    return dom
