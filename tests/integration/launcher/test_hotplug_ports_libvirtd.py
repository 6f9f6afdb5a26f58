"""Free PCIe root ports on a real libvirtd's QEMU driver: the domain manager defines a q35 VMI's domain
(never started) with KubeVirt's placeholders, which leave their root ports empty, and its extra ports."""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libvirt
import pytest
from lxml import etree

from kubevirt.virt_launcher.libvirtd import Libvirtd
from kubevirt.virt_launcher.virtwrap.domain_pipeline import convert_in_process, domain_xml
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.node import NodeFacts
from kubevirt.virt_launcher.virtwrap.vmi import vmi_facts

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        not (shutil.which("libvirtd") and shutil.which("qemu-system-x86_64")),
        reason="needs libvirtd and QEMU",
    ),
]

CAPS_CACHE = Path(os.environ.get("KUBEVIRT_CACHE", "/var/cache/kubevirt-py")) / "libvirt-qemu-capabilities"
# 128Mi, one bridge interface on the pod network, a SATA containerDisk, q35
TINY: dict[str, Any] = json.loads(
    (
        Path(__file__).parents[2] / "testdata/conformance/vmi/valid/001-minimal-containerdisk.defaults.json"
    ).read_text()
)
NODE = NodeFacts(emulation=True, slotless_max_memory=False)  # libvirt 9 wants slots with <maxMemory>


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[libvirt.virConnect]:
    daemon = Libvirtd(tmp_path_factory.mktemp("libvirtd"), capabilities_cache=CAPS_CACHE)
    daemon.start()
    try:
        connection = libvirt.open(daemon.uri)
        yield connection
        connection.close()
    finally:
        daemon.stop()


def tiny(memory: str = "128Mi", **devices: Any) -> dict[str, Any]:
    # Running already: a sync defines the missing domain and does not start it.
    vmi = copy.deepcopy(TINY)
    vmi["status"]["phase"] = "Running"
    vmi["spec"]["domain"]["memory"]["guest"] = memory
    vmi["spec"]["domain"]["devices"].update(devices)
    return vmi


def defined(conn: libvirt.virConnect, vmi: dict[str, Any]) -> etree._Element:
    """The domain the manager defines for ``vmi``, as libvirt keeps it (the domain is then removed)."""
    raw = json.dumps(vmi).encode()
    DomainManager(conn, convert_in_process, node=NODE).sync_vmi(vmi_facts(vmi, raw=raw))
    dom = conn.lookupByName("default_tiny")
    try:
        assert not dom.isActive()
        return etree.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE).encode())
    finally:
        dom.undefine()


def defined_as_converted(conn: libvirt.virConnect, vmi: dict[str, Any]) -> etree._Element:
    """The domain libvirt makes of the converter's XML alone (how it was defined before)."""
    dom = conn.defineXML(domain_xml(json.dumps(vmi), None, NODE))
    try:
        return etree.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE).encode())
    finally:
        dom.undefine()


def root_ports(domain: etree._Element) -> tuple[list[int], list[int]]:
    """The indices of the domain's pcie-root-ports, and of those no device sits behind."""
    ports = [int(str(c.get("index"))) for c in domain.iterfind("devices/controller[@model='pcie-root-port']")]
    used = {int(str(a.get("bus")), 16) for a in domain.iterfind("devices//address[@type='pci']")}
    return ports, [port for port in ports if port not in used]


def test_a_tiny_vmi_gets_the_placeholders_ports_free(conn: libvirt.virConnect) -> None:
    domain = defined(conn, tiny())
    # 3 placeholders (4 - 1 interface); v2 wants max(8 - 5, 3) = 3: no extra controller. libvirt adds
    # one spare port of its own, which is all the converter's domain alone had free.
    assert root_ports(domain) == ([1, 2, 3, 4, 5, 6, 7, 8], [2, 3, 4, 8])
    assert root_ports(defined_as_converted(conn, tiny())) == ([1, 2, 3, 4, 5], [5])
    interfaces = domain.findall("devices/interface")
    assert [i.find("alias").get("name") for i in interfaces] == ["ua-default"]  # type: ignore[union-attr]
    assert domain.find("devices/interface/target") is None  # no placeholder left
    assert interfaces[0].find("address").get("bus") == "0x01"  # type: ignore[union-attr]
    # what is not a device is the converter's: the KubeVirt metadata is there
    assert domain.find("metadata/{http://kubevirt.io}kubevirt") is not None


def test_the_functional_guest_shape_gets_the_same_free_ports(conn: libvirt.virConnect) -> None:
    # Two virtio disks and masquerade (the cluster tests' guest): max(8 - 7, 3) = 3, the placeholders.
    vmi = tiny(
        disks=[{"name": "rootdisk", "disk": {"bus": "virtio"}}, {"name": "data", "disk": {"bus": "virtio"}}],
        interfaces=[{"name": "default", "masquerade": {}}],
    )
    vmi["spec"]["volumes"].append({"name": "data", "containerDisk": {"image": "registry.example.test/d:1"}})
    ports, free = root_ports(defined(conn, vmi))
    assert (len(ports), free) == (10, [2, 3, 4, 10])


def test_a_large_vmi_gets_extra_ports_above_libvirts(conn: libvirt.virConnect) -> None:
    # 3Gi: v2 wants max(16 - 5, 6) = 11 free; 3 placeholders, so 8 bare ports after libvirt's highest (8).
    domain = defined(conn, tiny(memory="3Gi"))
    ports, free = root_ports(domain)
    assert ports == list(range(1, 17))
    assert free == [2, 3, 4, 8, *range(9, 17)]
    # libvirt gave the bare ports addresses of their own on bus 0
    assert all(
        c.find("address") is not None for c in domain.iterfind("devices/controller[@model='pcie-root-port']")
    )


def test_devices_on_the_root_complex_reserve_nothing(conn: libvirt.virConnect) -> None:
    vmi = tiny()
    vmi["metadata"]["annotations"]["kubevirt.io/placePCIDevicesOnRootComplex"] = "true"
    assert root_ports(defined(conn, vmi)) == root_ports(defined_as_converted(conn, vmi))
