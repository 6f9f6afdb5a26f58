"""Free PCIe root ports for hotplug: KubeVirt's counts, its placeholder interfaces, and the order of the
defines (the libvirt side is simulated here; tests/integration/launcher/test_hotplug_ports_libvirtd.py
runs it on a real libvirtd)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import libvirt
import pytest
from lxml import etree

from kubevirt.log import get_logger
from kubevirt.virt_launcher.virtwrap import hotplug_ports as hp
from kubevirt.virt_launcher.virtwrap.domain_pipeline import domain_xml
from kubevirt.virt_launcher.virtwrap.errors import InvalidRequestError
from kubevirt.virt_launcher.virtwrap.node import NodeFacts
from kubevirt_api.view import VMIView

VALID = Path(__file__).parents[2] / "testdata/conformance/vmi/valid"
# 128Mi, one bridge interface on the pod network, a SATA containerDisk, q35, amd64
TINY: dict[str, Any] = json.loads((VALID / "001-minimal-containerdisk.defaults.json").read_text())
ROOT_COMPLEX = "kubevirt.io/placePCIDevicesOnRootComplex"
SLOT_COUNT = "kubevirt.io/pci-interface-slot-count"


def vmi(
    *,
    interfaces: int = 1,
    memory: str = "128Mi",
    annotations: dict[str, str] | None = None,
    virtio_disks: int = 0,
    **spec: Any,
) -> dict[str, Any]:
    """The tiny VMI with ``interfaces`` bridge interfaces on as many Multus networks (the first on the
    pod network), its guest memory, annotations and ``virtio_disks`` more containerDisks."""
    out = copy.deepcopy(TINY)
    out["metadata"]["annotations"].update(annotations or {})
    out["spec"].update(spec)
    domain = out["spec"]["domain"]
    domain["memory"]["guest"] = memory
    domain["resources"]["requests"]["memory"] = memory
    domain["devices"]["interfaces"] = [{"name": f"net{i}", "bridge": {}} for i in range(interfaces)]
    out["spec"]["networks"] = [
        {"name": f"net{i}", **({"pod": {}} if i == 0 else {"multus": {"networkName": f"nad{i}"}})}
        for i in range(interfaces)
    ]
    for i in range(virtio_disks):
        domain["devices"]["disks"].append({"name": f"data{i}", "disk": {"bus": "virtio"}})
        out["spec"]["volumes"].append({"name": f"data{i}", "containerDisk": {"image": f"r.test/d{i}:1"}})
    return out


def converted(data: dict[str, Any]) -> etree._Element:
    """The converter's domain for ``data`` (as virt-launcher renders it under emulation)."""
    xml = domain_xml(json.dumps(data), None, NodeFacts(emulation=True, slotless_max_memory=True))
    return hp.parse_domain(xml)


def view(data: dict[str, Any]) -> VMIView:
    return VMIView(data)


# -- when ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("architecture", "machine", "supported"),
    [
        ("amd64", {"type": "q35"}, True),
        ("amd64", {"type": "pc-q35-rhel9.6.0"}, True),
        ("", {"type": "q35"}, True),
        ("amd64", None, True),  # no machine at all: KubeVirt assumes the default (q35)
        ("arm64", {"type": "virt"}, True),
        ("arm64", {"type": "virt-9.0"}, True),
        ("amd64", {"type": "pc-i440fx-7.2"}, False),
        ("amd64", {"type": "pc"}, False),
        ("amd64", {}, False),  # a machine with no type: neither q35 nor virt
        ("s390x", {"type": "s390-ccw-virtio"}, False),
        ("ppc64le", {"type": "pseries"}, False),
        ("s390x", None, False),
    ],
)
def test_pcie_hotplug_needs_amd64_or_arm64_and_a_q35_or_virt_machine(
    architecture: str, machine: dict[str, str] | None, supported: bool
) -> None:
    data = copy.deepcopy(TINY)
    data["spec"]["architecture"] = architecture
    if machine is None:
        del data["spec"]["domain"]["machine"]
    else:
        data["spec"]["domain"]["machine"] = machine
    assert hp.supports_pcie_hotplug(view(data).spec) is supported


# -- how many ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("interfaces", "annotations", "expected"),
    [
        (0, {}, 0),  # no interfaces: no placeholders
        (1, {}, 3),  # 4 - 1
        (2, {}, 2),
        (3, {}, 1),
        (4, {}, 0),
        (6, {}, 0),  # never negative
        (1, {ROOT_COMPLEX: "true"}, 0),
        (1, {ROOT_COMPLEX: "True"}, 3),  # only "true" counts
    ],
)
def test_v1_placeholders_fill_four_interface_slots(
    interfaces: int, annotations: dict[str, str], expected: int
) -> None:
    data = view(vmi(interfaces=interfaces, annotations=annotations))
    assert hp.hotplug_port_count_v1(data) == expected
    assert hp.placeholder_count(data) == expected


@pytest.mark.parametrize(
    ("slots", "interfaces", "expected"),
    [
        ("5", 1, 4),  # the frozen total less today's interfaces
        ("4", 4, 0),
        ("2", 3, 0),  # an interface added while stopped: no placeholder, never negative
        ("6", 0, 6),  # placeholders even without interfaces (v1 gives none)
        ("+3", 1, 2),  # Go's Atoi takes a sign
        ("-1", 1, 0),
    ],
)
def test_a_frozen_slot_total_gives_the_placeholders(slots: str, interfaces: int, expected: int) -> None:
    data = view(vmi(interfaces=interfaces, annotations={SLOT_COUNT: slots}))
    assert hp.placeholder_count(data) == expected


@pytest.mark.parametrize("slots", ["", "abc", " 3", "3.0", "0x4"])
def test_a_slot_total_that_is_not_an_integer_is_refused_naming_the_annotation(slots: str) -> None:
    data = view(vmi(annotations={SLOT_COUNT: slots}))
    with pytest.raises(InvalidRequestError, match=rf"metadata\.annotations\[{SLOT_COUNT}\]: invalid"):
        hp.placeholder_count(data)


def test_pci_devices_are_counted_as_kubevirt_counts_them() -> None:
    # The tiny VMI's domain: its interface and the usb (model none), scsi and virtio-serial controllers
    # and the balloon; the SATA disk, video, serial and graphics take no count.
    assert hp.count_pci_devices(converted(vmi())) == 5
    domain = hp.parse_domain(
        """<domain><devices>
        <interface type="ethernet"/>
        <interface type="ethernet"><address type="pci" bus="0x01"/></interface>
        <interface type="ethernet"><address type="ccw"/></interface>
        <hostdev mode="subsystem" type="pci"/>
        <hostdev mode="subsystem" type="usb"/>
        <controller type="pci" index="0" model="pcie-root"/>
        <controller type="pci" index="1" model="pcie-root-port"/>
        <controller type="sata" index="0"><address type=""/></controller>
        <disk><target bus="virtio"/></disk>
        <disk><target bus="virtio"/><address type="drive"/></disk>
        <disk><target bus="scsi"/></disk>
        <input type="tablet" bus="virtio"/>
        <input type="tablet" bus="usb"/>
        <watchdog model="i6300esb"/>
        <rng model="virtio"/>
        <memballoon model="none"/>
        <video/><sound model="ich9"/>
        </devices></domain>"""
    )
    # 2 interfaces, the PCI hostdev, 2 controllers, 1 disk, 1 input, watchdog, rng, balloon
    assert hp.count_pci_devices(domain) == 10


@pytest.mark.parametrize(
    ("data", "devices", "v2", "placeholders", "extra"),
    [
        # 128Mi and 1 interface: max(8 - 5, 3) = 3 wanted, the 3 placeholders give them
        (vmi(), 5, 3, 3, 0),
        # 2 more virtio disks: max(8 - 7, 3) = 3
        (vmi(virtio_disks=2), 7, 3, 3, 0),
        # no interface: max(8 - 4, 3) = 4, all of them bare controllers
        (vmi(interfaces=0), 4, 4, 0, 4),
        # 4 interfaces: max(8 - 8, 3) = 3, no placeholders
        (vmi(interfaces=4), 8, 3, 0, 3),
        # 2Gi is not above the threshold: max(8 - 5, 3)
        (vmi(memory="2Gi"), 5, 3, 3, 0),
        # above 2Gi: max(16 - 5, 6) = 11, 3 of them placeholders
        (vmi(memory="2049Mi"), 5, 11, 3, 8),
        (vmi(memory="8Gi", interfaces=2), 6, 10, 2, 8),
        # many devices: max(16 - 16, 6) = 6
        (vmi(memory="8Gi", interfaces=2, virtio_disks=10), 16, 6, 2, 4),
        # a frozen total of 6 with 2 interfaces: 4 placeholders, more than v2's max(8 - 6, 3)
        (vmi(interfaces=2, annotations={SLOT_COUNT: "6"}), 6, 3, 4, 0),
        (vmi(memory="4Gi", annotations={SLOT_COUNT: "2"}), 5, 11, 1, 10),
        # devices on the root complex: nothing reserved
        (vmi(memory="4Gi", annotations={ROOT_COMPLEX: "true"}), 5, 0, 0, 0),
    ],
)
def test_v2_wants_free_ports_by_memory_and_devices_beyond_the_placeholders(
    data: dict[str, Any], devices: int, v2: int, placeholders: int, extra: int
) -> None:
    domain = converted(data)
    assert hp.count_pci_devices(domain) == devices
    assert hp.hotplug_port_count_v2(view(data), domain) == v2
    assert hp.placeholder_count(view(data)) == placeholders
    assert hp.extra_controller_count(view(data), domain, placeholders) == extra


def test_memory_is_read_in_bytes_whatever_the_unit() -> None:
    assert hp.memory_bytes(converted(vmi(memory="3Gi"))) == 3 * 1024**3
    assert hp.memory_bytes(hp.parse_domain('<domain><memory unit="KiB">2097153</memory></domain>')) == (
        2097153 * 1024
    )
    assert hp.memory_bytes(hp.parse_domain("<domain><memory>4</memory></domain>")) == 4096  # KiB
    assert hp.memory_bytes(hp.parse_domain("<domain/>")) == 0


# -- the controllers and placeholders ------------------------------------------------------------


def controllers(domain: etree._Element) -> list[tuple[str | None, str | None, str | None]]:
    return [(c.get("type"), c.get("index"), c.get("model")) for c in domain.iterfind("devices/controller")]


def test_extra_root_ports_are_numbered_after_the_highest_pci_controller() -> None:
    domain = converted(vmi())  # no pci controller: the first one is index 1
    assert hp.max_pci_controller_index(domain) == 0
    assert hp.append_pcie_root_port_controllers(domain, 2) == 2
    assert controllers(domain)[-2:] == [("pci", "1", "pcie-root-port"), ("pci", "2", "pcie-root-port")]
    last = domain.findall("devices/controller")[-1]
    assert (dict(last.items()), len(last)) == ({"type": "pci", "index": "2", "model": "pcie-root-port"}, 0)
    other = hp.parse_domain(
        '<domain><devices><controller type="scsi" index="40"/><controller type="pci" index="x"/>'
        '<controller type="pci" index="7" model="pcie-root-port"/></devices></domain>'
    )
    assert hp.max_pci_controller_index(other) == 7  # other types and unreadable indices do not count


def test_no_root_port_goes_above_bus_index_31() -> None:
    domain = hp.parse_domain('<domain><devices><controller type="pci" index="29"/></devices></domain>')
    assert hp.append_pcie_root_port_controllers(domain, 5) == 2
    assert [index for _, index, _ in controllers(domain)] == ["29", "30", "31"]
    full = hp.parse_domain('<domain><devices><controller type="pci" index="31"/></devices></domain>')
    assert hp.append_pcie_root_port_controllers(full, 3) == 0


def test_placeholders_are_kubevirts_unmanaged_ethernet_interfaces() -> None:
    assert etree.tostring(hp.placeholder_interface(2, "virtio-non-transitional")) == (
        b'<interface type="ethernet"><source/><target dev="placeholder-2" managed="no"/>'
        b'<model type="virtio-non-transitional"/></interface>'
    )
    assert hp.transitional_model_type(view(vmi())) == "virtio-non-transitional"
    transitional = vmi()
    transitional["spec"]["domain"]["devices"]["useVirtioTransitional"] = True
    assert hp.transitional_model_type(view(transitional)) == "virtio-transitional"


# -- the defines ---------------------------------------------------------------------------------


class FakeLibvirt:
    """Defines as libvirt's QEMU driver does as far as root ports go: each interface without an address
    goes on the first empty pcie-root-port, or a new one after the highest PCI controller; the domain
    keeps the UUID it got."""

    def __init__(self) -> None:
        self.defined: list[etree._Element] = []  # each definition as it was given

    def define(self, xml: str) -> FakeDomain:
        self.defined.append(hp.parse_domain(xml))
        domain = hp.parse_domain(xml)
        devices = domain.find("devices")
        assert devices is not None
        for interface in devices.iterfind("interface"):
            if interface.find("address") is None:
                used = {int(str(a.get("bus")), 16) for a in devices.iterfind("*/address[@type='pci']")}
                ports = [int(str(c.get("index"))) for c in devices.iterfind("controller[@type='pci']")]
                free = [port for port in ports if port and port not in used]
                bus = free[0] if free else hp.max_pci_controller_index(domain) + 1
                if not free:
                    etree.SubElement(
                        devices, "controller", type="pci", index=str(bus), model="pcie-root-port"
                    )
                etree.SubElement(interface, "address", type="pci", bus=f"{bus:#04x}")
        if domain.find("uuid") is None:
            etree.SubElement(domain, "uuid").text = f"uuid-{len(self.defined) - 1}"
        return FakeDomain(domain)


class FakeDomain:
    def __init__(self, domain: etree._Element) -> None:
        self.domain = domain

    def XMLDesc(self, flags: int) -> str:  # noqa: N802 (libvirt's name)
        assert flags == libvirt.VIR_DOMAIN_XML_INACTIVE
        return hp.to_xml(self.domain)

    def UUIDString(self) -> str:  # noqa: N802 (libvirt's name)
        return str(self.domain.findtext("uuid"))


def allocate(data: dict[str, Any]) -> tuple[FakeLibvirt, Any]:
    libvirt_ = FakeLibvirt()
    xml = hp.to_xml(converted(data))
    dom = hp.allocate_hotplug_ports(libvirt_.define, view(data), xml, get_logger())
    return libvirt_, dom


def interface_targets(domain: etree._Element) -> list[str | None]:
    return [i.get("dev") for i in domain.iterfind("devices/interface/target")]


def test_placeholders_are_defined_then_replaced_by_the_vmis_interfaces_keeping_libvirts_ports() -> None:
    libvirt_, dom = allocate(vmi())
    with_placeholders, without = libvirt_.defined  # 3 placeholders, no extra controller: two defines
    assert interface_targets(with_placeholders) == ["placeholder-0", "placeholder-1", "placeholder-2"]
    # after the VMI's own interface, which libvirt placed first
    aliases = [i.find("alias") for i in with_placeholders.iterfind("devices/interface")]
    assert [None if a is None else a.get("name") for a in aliases] == ["ua-net0", None, None, None]
    # Defined again: libvirt's four root ports stay, the VMI's interface comes back as converted (no
    # address: libvirt places it again), and the UUID libvirt gave is kept.
    assert interface_targets(without) == []
    assert [i.find("address") for i in without.iterfind("devices/interface")] == [None]
    assert [index for kind, index, _ in controllers(without) if kind == "pci"] == ["1", "2", "3", "4"]
    placed = dom.domain.find("devices/interface/address")
    assert placed is not None
    assert placed.get("bus") == "0x01"  # its own port again: the placeholders' three stay empty
    assert without.findtext("uuid") == "uuid-0"
    assert dom.domain.findtext("uuid") == "uuid-0"


def test_extra_root_ports_are_defined_last_above_the_ports_libvirt_filled() -> None:
    libvirt_, dom = allocate(vmi(memory="3Gi"))  # 3 placeholders and 11 - 3 = 8 bare root ports
    assert len(libvirt_.defined) == 3
    second, third = libvirt_.defined[1:]
    second_ports = [index for kind, index, _ in controllers(second) if kind == "pci"]
    assert second_ports == ["1", "2", "3", "4"]  # the interface's and the placeholders' ports
    kept = len(controllers(second))
    assert controllers(third)[:kept] == controllers(second)
    added = controllers(third)[kept:]
    assert added == [("pci", str(index), "pcie-root-port") for index in range(5, 13)]
    assert third.findtext("uuid") == "uuid-0"
    assert len(controllers(dom.domain)) == len(controllers(third))  # the last definition is returned


def test_without_placeholders_the_bare_ports_follow_the_converters_controllers() -> None:
    # KubeVirt reads nothing back then: the ports are numbered from 1, where libvirt also places devices.
    libvirt_, _ = allocate(vmi(interfaces=0))
    first, second = libvirt_.defined
    assert [c for c in controllers(first) if c[0] == "pci"] == []
    assert [c for c in controllers(second) if c[0] == "pci"] == [
        ("pci", str(index), "pcie-root-port") for index in range(1, 5)
    ]


def test_domains_that_reserve_nothing_are_defined_once_without_placeholders() -> None:
    # on the root complex (nothing counted), and without PCIe hotplug (nothing counted either)
    for data in (vmi(annotations={ROOT_COMPLEX: "true"}), vmi(architecture="s390x")):
        libvirt_ = FakeLibvirt()
        xml = hp.to_xml(converted(vmi()))
        hp.allocate_hotplug_ports(libvirt_.define, view(data), xml, get_logger())
        assert len(libvirt_.defined) == 1
        assert interface_targets(libvirt_.defined[0]) == []


def test_a_bad_slot_total_defines_nothing() -> None:
    libvirt_ = FakeLibvirt()
    data = vmi(annotations={SLOT_COUNT: "many"})
    with pytest.raises(InvalidRequestError, match="pci-interface-slot-count"):
        hp.allocate_hotplug_ports(libvirt_.define, view(data), hp.to_xml(converted(vmi())), get_logger())
    assert libvirt_.defined == []
