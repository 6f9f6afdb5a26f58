"""Rendered domains validate against libvirt's schema and are defined by libvirt's test driver; what
libvirt gives back reads into the model without losing anything the project reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import libvirt
import pytest
from lxml import etree

from kubevirt.virt_launcher.virtwrap.api import Domain
from kubevirt.virtctl.render import options_from_flags, render_domain

CONFORMANCE = Path(__file__).resolve().parents[2] / "testdata" / "conformance" / "vmi"
DOMAIN_RNG = Path("/usr/share/libvirt/schemas/domain.rng")
# Cases where KubeVirt accepts a VMI that libvirt's schema does not allow (the conformance README):
# a CPU feature without a policy, a lun disk on a file-backed volume, an unknown watchdog action.
SCHEMA_EXCEPTIONS = frozenset(
    {"010-cpu-features", "014-scsi-multi", "018-lun-pvc", "075-lenient-watchdog-unknown-action"}
)
# libvirt before 10 (Debian 12 ships 9.0) insists on memory slots next to <maxMemory>; KubeVirt writes
# slots="0" for virtio-mem hotplug, which the libvirt KubeVirt ships accepts.
SLOTLESS_MAX_MEMORY = "XML error: both maximum memory size and memory slot count must be specified"


def _renders() -> list[tuple[str, str, str]]:
    out = []
    for source in sorted((CONFORMANCE / "valid").glob("*.json")):
        if source.name.count(".") != 1:
            continue
        case = source.name.removesuffix(".json")
        flags = source.with_name(f"{case}.flags")
        args = flags.read_text().split() if flags.exists() else []
        for strategy in ("LiveUpdate", "Stage"):
            for domain_type in ("kvm", "qemu"):
                options = options_from_flags(
                    [*args, f"--domain-type={domain_type}"], rollout_strategy=strategy
                )
                xml = render_domain(json.loads(source.read_text()), options).to_xml()
                out.append((case, f"{case}-{strategy}-{domain_type}", xml))
    return out


RENDERS = _renders()


@pytest.fixture(scope="module")
def relaxng() -> etree.RelaxNG:
    return etree.RelaxNG(etree.parse(str(DOMAIN_RNG)))


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[libvirt.virConnect]:
    """A fresh test-driver connection with no predefined domains."""
    node = tmp_path / "node.xml"
    node.write_text("<node/>")
    libvirt.registerErrorHandler(lambda *_: None, None)
    connection = libvirt.open(f"test://{node}")
    yield connection
    connection.close()


@pytest.mark.parametrize(("case", "label", "xml"), RENDERS, ids=[r[1] for r in RENDERS])
def test_schema_accepts_rendered_domain(relaxng: etree.RelaxNG, case: str, label: str, xml: str) -> None:
    valid = relaxng.validate(etree.fromstring(xml.encode()))
    if case in SCHEMA_EXCEPTIONS:
        assert not valid, f"{label}: expected KubeVirt's schema-invalid output"
    else:
        assert valid, f"{label}: {relaxng.error_log.last_error}"


def _without_max_memory(xml: str) -> str:
    root = etree.fromstring(xml.encode())
    for element in root.findall("maxMemory"):
        assert element.get("slots") == "0"
        root.remove(element)
    return etree.tostring(root, encoding="unicode")


@pytest.mark.parametrize(("case", "label", "xml"), RENDERS, ids=[r[1] for r in RENDERS])
def test_test_driver_defines_rendered_domain(
    conn: libvirt.virConnect, case: str, label: str, xml: str
) -> None:
    if case in SCHEMA_EXCEPTIONS:
        with pytest.raises(libvirt.libvirtError, match="failed to validate against schema"):
            conn.defineXMLFlags(xml, libvirt.VIR_DOMAIN_DEFINE_VALIDATE)
        return
    if "<maxMemory " in xml and libvirt.getVersion() < 10_000_000:
        with pytest.raises(libvirt.libvirtError, match=SLOTLESS_MAX_MEMORY):
            conn.defineXMLFlags(xml, libvirt.VIR_DOMAIN_DEFINE_VALIDATE)
        xml = _without_max_memory(xml)  # everything else must still be accepted
    dom = conn.defineXMLFlags(xml, libvirt.VIR_DOMAIN_DEFINE_VALIDATE)
    assert dom.name() == Domain.from_xml(xml).name


# One render per case and rollout strategy; the schema exceptions cannot be defined (tested above).
DEFINABLE = [r for r in RENDERS[::2] if r[0] not in SCHEMA_EXCEPTIONS]


@pytest.mark.parametrize(("case", "label", "xml"), DEFINABLE, ids=[r[1] for r in DEFINABLE])
def test_what_libvirt_returns_survives_read_and_write(
    conn: libvirt.virConnect, case: str, label: str, xml: str
) -> None:
    if "<maxMemory " in xml and libvirt.getVersion() < 10_000_000:
        xml = _without_max_memory(xml)
    ours = Domain.from_xml(xml)
    dumped = conn.defineXML(xml).XMLDesc(0)
    read = Domain.from_xml(dumped)
    # Writing what we read and reading it again gives the same model: nothing we read is lost.
    assert Domain.from_xml(read.to_xml()) == read
    # And the parts the project reads back from libvirt carry what we wrote.
    assert read.name == ours.name
    assert read.metadata.kubevirt.uid == ours.metadata.kubevirt.uid

    # libvirt sorts disks by target; each keeps its alias, device name and source
    def disks(domain: Domain) -> dict[str | None, tuple[str | None, str | None, str | None]]:
        return {
            d.alias.name if d.alias else None: (d.target.dev, d.source.file, d.source.dev)
            for d in domain.devices.disks
        }

    assert disks(read) == disks(ours)
    assert [i.alias for i in read.devices.interfaces] == [i.alias for i in ours.devices.interfaces]
    assert read.vcpu is not None
    assert ours.vcpu is not None
    assert read.vcpu.cpus == ours.vcpu.cpus
    assert read.cpu.topology == ours.cpu.topology
    # libvirt copies the SMBIOS UUID to <uuid>, drops empty entries and uses its own entry order
    assert read.sysinfo is not None
    assert ours.sysinfo is not None
    assert read.uuid == ours.sysinfo.system[0].value
    assert {e.name: e.value for e in read.sysinfo.system} == {
        e.name: e.value for e in ours.sysinfo.system if e.value
    }


def test_every_valid_case_is_rendered_four_ways() -> None:
    assert len(RENDERS) == 54 * 2 * 2
