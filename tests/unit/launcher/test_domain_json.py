"""The domain JSON the launcher sends is KubeVirt's Go ``api.Domain`` as ``encoding/json`` writes it:
Go field names as keys, nothing omitted, ``null`` for absent pointers and slices, zero values otherwise."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libvirt
import pytest
from lxml import etree

from kubevirt.virt_launcher.virtwrap import api, states
from kubevirt.virt_launcher.virtwrap.api import Domain
from kubevirt.virt_launcher.virtwrap.domain_json import domain_uid, live_domain_json

CONFORMANCE = Path(__file__).resolve().parents[2] / "testdata" / "conformance" / "vmi" / "valid"
# KubeVirt output libvirt refuses to define (a lun disk on a file, an unknown watchdog action).
UNDEFINABLE = frozenset({"014-scsi-multi", "018-lun-pvc", "075-lenient-watchdog-unknown-action"})
# One reference domain per case (the hotplug-free variants say the same about the JSON).
REFERENCE_DOMAINS = [
    path for path in sorted(CONFORMANCE.glob("*.domain.xml")) if path.name.split(".")[0] not in UNDEFINABLE
]
KUBEVIRT_NS = "{http://kubevirt.io}"


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[libvirt.virConnect]:
    """libvirt's in-process test driver, to get back the XML libvirt itself writes."""
    node = tmp_path_factory.mktemp("libvirt") / "node.xml"
    node.write_text("<node/>")
    libvirt.registerErrorHandler(lambda *_: None, None)
    connection = libvirt.open(f"test://{node}")
    yield connection
    connection.close()


def _definable(xml: str) -> str:
    """libvirt before 10 refuses <maxMemory> without slots (KubeVirt writes slots="0")."""
    root = etree.fromstring(xml.encode())
    if libvirt.getVersion() < 10_000_000:
        for element in root.findall("maxMemory"):
            root.remove(element)
    return etree.tostring(root, encoding="unicode")


def _alias(element: etree._Element) -> dict[str, Any] | None:
    name = element.get("name") if element is not None else None
    if name is None:
        return None
    if name.startswith("ua-"):
        return {"Name": name[3:], "UserDefined": True}
    return {"Name": name, "UserDefined": False}


def test_there_are_reference_domains() -> None:
    assert len(REFERENCE_DOMAINS) > 50


@pytest.mark.parametrize("path", REFERENCE_DOMAINS, ids=lambda p: p.name.split(".")[0])
def test_libvirt_domain_reads_into_kubevirt_json(conn: libvirt.virConnect, path: Path) -> None:
    dom = conn.defineXML(_definable(path.read_text()))
    try:
        state, reason = dom.state()
        xml = dom.XMLDesc(0)
        domain = live_domain_json(xml, state, reason, for_event=True)
    finally:
        dom.undefine()
    root = etree.fromstring(xml.encode())
    # It is plain JSON all the way down.
    assert json.loads(json.dumps(domain)) == domain
    assert (domain["kind"], domain["apiVersion"]) == ("Domain", "1.2.2")
    namespace, name = root.findtext("name").split("_", 1)
    uid = root.findtext(f"metadata/{KUBEVIRT_NS}kubevirt/{KUBEVIRT_NS}uid") or ""
    assert domain["ObjectMeta"].pop("uid", "") == uid  # omitempty: absent when empty
    assert domain["ObjectMeta"] == {"name": name, "namespace": namespace, "creationTimestamp": None}
    assert domain["Status"]["Status"] == states.SHUTOFF
    assert domain["Status"]["Reason"] == states.REASON_UNKNOWN  # defined, never run
    spec = domain["Spec"]
    assert domain_uid(domain) == uid
    assert spec["XMLName"] == {"Space": "", "Local": "domain"}
    assert (spec["Type"], spec["Name"]) == (root.get("type"), root.findtext("name"))
    assert spec["UUID"] == root.findtext("uuid")
    memory = root.find("memory")
    assert spec["Memory"] == {"Value": int(memory.text), "Unit": memory.get("unit")}
    assert spec["OS"]["Type"]["Machine"] == root.find("os/type").get("machine")
    assert spec["OS"]["Type"]["OS"] == root.findtext("os/type")
    disks = root.findall("devices/disk")
    assert [d["Target"] for d in spec["Devices"]["Disks"] or []] == [
        {"Bus": t.get("bus") or "", "Device": t.get("dev"), "Tray": t.get("tray") or ""}
        for t in (d.find("target") for d in disks)
    ]
    assert [d["Alias"] for d in spec["Devices"]["Disks"] or []] == [_alias(d.find("alias")) for d in disks]
    interfaces = root.findall("devices/interface")
    assert [i["MAC"] for i in spec["Devices"]["Interfaces"] or []] == [
        {"MAC": i.find("mac").get("address")} for i in interfaces
    ]
    assert [i["Alias"] for i in spec["Devices"]["Interfaces"] or []] == [
        _alias(i.find("alias")) for i in interfaces
    ]
    for interface in spec["Devices"]["Interfaces"] or []:
        assert interface["XMLName"] == {"Space": "", "Local": "interface"}
        assert set(interface["Source"]) == {"Network", "Device", "Bridge", "Mode", "Address"}  # not a pointer
    # Go's decoder never fills fields whose tag carries a namespace prefix.
    assert spec["QEMUCmd"] is None
    assert spec["XmlNS"] == ""


def test_absent_values_take_go_zero_values_or_null() -> None:
    xml = (
        '<domain type="kvm"><name>ns_vm</name><memory unit="KiB">1024</memory>'
        "<devices>"
        '<disk type="file" device="disk"><source file="/d.img"/><target dev="vda"/>'
        '<driver name="qemu" type="raw"/><alias name="ua-root"/><boot order="1"/></disk>'
        '<interface type="ethernet"><mac address="02:00:00:00:00:01"/><alias name="net0"/></interface>'
        '<video><model type="vga" vram="16384"/></video>'
        "</devices>"
        '<metadata><kubevirt xmlns="http://kubevirt.io"><uid>u-1</uid>'
        "<graceperiod><deletionGracePeriodSeconds>30</deletionGracePeriodSeconds>"
        "<deletionTimestamp>2026-11-30T12:00:01.25Z</deletionTimestamp></graceperiod>"
        "</kubevirt></metadata>"
        '<cpu><topology sockets="1" cores="2" threads="1"/></cpu>'
        '<vcpu placement="static">2</vcpu>'
        "</domain>"
    )
    spec = Domain.from_xml(xml).to_json_dict()
    disk = spec["Devices"]["Disks"][0]
    assert disk["Source"] == {
        "Dev": "",
        "File": "/d.img",
        "StartupPolicy": "",
        "Protocol": "",
        "Name": "",
        "Host": None,
        "Reservations": None,
        "Slices": None,
        "DataStore": None,
    }
    assert disk["Target"] == {"Bus": "", "Device": "vda", "Tray": ""}
    assert disk["Alias"] == {"Name": "root", "UserDefined": True}
    assert disk["BootOrder"] == {"Order": 1}
    assert disk["Driver"]["IOThread"] is None  # *uint
    assert disk["Driver"]["ErrorPolicy"] == ""
    assert disk["ExpandDisksEnabled"] is False
    assert disk["ReadOnly"] is None
    interface = spec["Devices"]["Interfaces"][0]
    assert interface["MAC"] == {"MAC": "02:00:00:00:00:01"}
    assert interface["Alias"] == {"Name": "net0", "UserDefined": False}
    assert interface["Source"]["Network"] == ""
    assert spec["Devices"]["Video"] == [
        {"Model": {"Type": "vga", "Heads": None, "Ram": None, "VRam": 16384, "VGAMem": None}}
    ]
    assert spec["Devices"]["Channels"] is None
    assert spec["Devices"]["Emulator"] == ""
    assert spec["CPU"] == {
        "Mode": "",
        "Model": "",
        "Features": None,
        "Topology": {"Sockets": 1, "Cores": 2, "Threads": 1},
        "NUMA": None,
    }
    assert spec["VCPU"] == {"Placement": "static", "CPUs": 2}
    assert spec["OS"]["Type"] == {"OS": "", "Arch": "", "Machine": ""}  # a non-pointer struct
    assert spec["Metadata"]["KubeVirt"]["GracePeriod"] == {
        "DeletionGracePeriodSeconds": 30,
        "DeletionTimestamp": "2026-11-30T12:00:01Z",  # metav1.Time: whole seconds
        "MarkedForGracefulShutdown": None,
    }


def test_structs_with_fields_under_other_names() -> None:
    numatune = api.NUMATune(memnodes=[api.MemNode(cellid=0, mode="strict", nodeset="1")])
    assert numatune.to_json_dict() == {
        "Memory": {"Mode": "", "NodeSet": ""},  # not a pointer in Go
        "MemNodes": [{"CellID": 0, "Mode": "strict", "NodeSet": "1"}],
    }
    hyperv = api.FeatureHyperv(vapic=api.FeatureState(state="on"), synic_timer=api.SyNICTimer(state="on"))
    data = hyperv.to_json_dict()
    assert data["VAPIC"] == {"State": "on"}
    assert data["SyNICTimer"] == {"State": "on", "Direct": None}
    assert data["EVMCS"] is None
    assert api.Features(acpi=api.FeatureEnabled()).to_json_dict()["ACPI"] == {}
