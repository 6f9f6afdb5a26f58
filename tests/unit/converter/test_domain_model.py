"""The domain model writes what it reads, in Go's MarshalIndent shape."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.api import Domain, XMLModelError

CONFORMANCE = Path(__file__).resolve().parents[2] / "testdata" / "conformance" / "vmi"
DOMAIN_FILES = sorted(CONFORMANCE.glob("*/*.domain*.xml"))
EMPTY_SYSINFO_SECTION = re.compile(r"\t\t<(bios|baseBoard|chassis)></\1>\n")


def test_there_are_reference_domains() -> None:
    assert len(DOMAIN_FILES) > 100


@pytest.mark.parametrize("path", DOMAIN_FILES, ids=lambda p: p.name)
def test_reference_domain_rewrites_byte_for_byte(path: Path) -> None:
    reference = path.read_text()
    # Empty SMBIOS sections are the only thing the model drops on purpose (libvirt rejects them).
    expected = EMPTY_SYSINFO_SECTION.sub("", reference)
    assert Domain.from_xml(reference).to_xml() + "\n" == expected


def test_absent_fields_are_not_written_and_required_children_are() -> None:
    domain = Domain(type="qemu", name="ns_vm")
    assert domain.to_xml() == (
        '<domain type="qemu" xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0">\n'
        "\t<name>ns_vm</name>\n"
        "\t<memory></memory>\n"
        "\t<os>\n\t\t<type></type>\n\t</os>\n"
        "\t<devices></devices>\n"
        '\t<metadata>\n\t\t<kubevirt xmlns="http://kubevirt.io">\n\t\t\t<uid></uid>\n\t\t</kubevirt>\n\t</metadata>\n'
        "\t<cpu></cpu>\n"
        "</domain>"
    )


def test_special_characters_are_escaped_and_read_back() -> None:
    domain = Domain(type="kvm", name="a&b")
    domain.os.type.os = "hvm"
    domain.os.cmdline = 'console=ttyS0 x="<1>"'
    domain.devices.disks.append(api.Disk(device="disk", serial="s'1", source=api.DiskSource(file='/a"b&c')))
    xml = domain.to_xml()
    assert 'file="/a&#34;b&amp;c"' in xml
    assert "<cmdline>console=ttyS0 x=&#34;&lt;1&gt;&#34;</cmdline>" in xml
    again = Domain.from_xml(xml)
    assert again == domain


def test_characters_xml_cannot_carry_are_written_as_replacement_characters() -> None:
    # As Go's encoding/xml does: the document stays well-formed, libvirt gets U+FFFD in their place.
    domain = Domain(type="kvm", name="a\x01b\udc80")
    domain.devices.disks.append(
        api.Disk(device="disk", serial="s\x1f\uffff", source=api.DiskSource(file="/x\x00"))
    )
    xml = domain.to_xml()
    again = Domain.from_xml(xml)
    assert again.name == "a\ufffdb\ufffd"
    assert again.devices.disks[0].serial == "s\ufffd\ufffd"
    assert again.devices.disks[0].source.file == "/x\ufffd"


def test_one_class_serves_several_tags() -> None:
    features = api.Features(
        pvspinlock=api.FeatureState(state="off"),
        vmport=api.FeatureState(state="off"),
        hyperv=api.FeatureHyperv(relaxed=api.FeatureState(state="on")),
    )
    xml = features.to_xml()
    assert '<pvspinlock state="off"></pvspinlock>' in xml
    assert '<relaxed state="on"></relaxed>' in xml
    assert api.Features.from_xml(xml) == features


def test_metadata_namespace_is_read_back() -> None:
    domain = Domain(name="x")
    domain.metadata.kubevirt.uid = "1234"
    domain.metadata.kubevirt.grace_period = api.GracePeriodMetadata(
        deletion_grace_period_seconds=30, marked_for_graceful_shutdown=True
    )
    again = Domain.from_xml(domain.to_xml())
    assert again.metadata.kubevirt.uid == "1234"
    assert again.metadata.kubevirt.grace_period == domain.metadata.kubevirt.grace_period


def test_qemu_commandline_round_trips() -> None:
    domain = Domain(name="x", qemu_commandline=api.Commandline(args=[api.QEMUArg(value="-fw_cfg")]))
    xml = domain.to_xml()
    assert '<qemu:commandline>\n\t\t<qemu:arg value="-fw_cfg"></qemu:arg>\n\t</qemu:commandline>' in xml
    assert Domain.from_xml(xml).qemu_commandline == domain.qemu_commandline


def test_unknown_elements_are_ignored_when_reading() -> None:
    xml = "<domain type='kvm'><name>n</name><on_crash>destroy</on_crash><vcpu>2</vcpu></domain>"
    domain = Domain.from_xml(xml)
    assert domain.name == "n"
    assert domain.vcpu == api.VCPU(cpus=2)


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ("<network/>", "expected root element <domain>"),
        ("<domain><vcpu>two</vcpu></domain>", "expected an integer"),
        ("<domain>", "malformed XML"),
    ],
)
def test_bad_documents_raise_model_errors(xml: str, message: str) -> None:
    with pytest.raises(XMLModelError, match=message):
        Domain.from_xml(xml)


def test_documents_are_read_in_parallel_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = [path.read_text() for path in DOMAIN_FILES[:40]]
    with ThreadPoolExecutor(max_workers=4) as pool:
        names = list(pool.map(lambda text: Domain.from_xml(text).name, texts * 3))
    assert names == [Domain.from_xml(text).name for text in texts] * 3


def test_repeated_reads_of_a_document_never_share_state() -> None:
    # from_xml keeps the model of a document it has seen twice and hands out copies of it: a caller
    # changing what it got must not change what the next reader of the same document gets.
    xml = (CONFORMANCE / "valid" / "069-kitchen-sink.domain.xml").read_text()
    reads = [Domain.from_xml(xml) for _ in range(4)]
    for later in reads[1:]:
        assert later.to_xml() == reads[0].to_xml()
        assert later is not reads[0]
        assert later.devices is not reads[0].devices
    reads[2].name = "changed"
    reads[2].devices.disks.clear()
    again = Domain.from_xml(xml)
    assert again.name == reads[0].name
    assert len(again.devices.disks) == len(reads[0].devices.disks)
    assert again.to_xml() == reads[0].to_xml()
