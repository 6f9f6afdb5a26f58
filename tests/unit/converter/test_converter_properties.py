"""Property tests: any VMI either converts (and the XML reads back to the same domain) or fails with
the project's own error naming a field; no other exception escapes."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubevirt.virt_launcher.virtwrap.api import Domain
from kubevirt.virt_launcher.virtwrap.converter import ConversionError, ConverterContext, convert_vmi_to_domain
from kubevirt.virtctl.manifests import RenderOptions
from kubevirt.virtctl.offline_vmi import RenderError
from kubevirt.virtctl.render import render_domain
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1 import VirtualMachineInstance

NAMES = st.sampled_from(["a", "b", "c", "root", "d-1"])
BOOLS = st.one_of(st.none(), st.booleans())
QUANTITIES = st.sampled_from(
    ["128Mi", "1Gi", "2Gi", "1.5Gi", "1000500m", "-1Gi", "0", "3", "500m", "1G", "1Ti"]
)
BUSES = st.sampled_from(["virtio", "sata", "scsi", "usb", "ide", "", "nvme"])


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def dict_of(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A mapping of the given keys, each present or absent; None values are left out."""
    return st.fixed_dictionaries({}, optional=fields).map(
        lambda d: {k: v for k, v in d.items() if v is not None}
    )


TARGET = dict_of(bus=BUSES, readonly=BOOLS)
DISK = dict_of(
    disk=dict_of(bus=BUSES, readonly=BOOLS, pciAddress=st.sampled_from(["0000:05:00.0", "zz", ""])),
    cdrom=dict_of(bus=BUSES, readonly=BOOLS, tray=st.sampled_from(["open", "closed"])),
    lun=dict_of(bus=BUSES, readonly=BOOLS, reservation=BOOLS),
    serial=st.sampled_from(["S-1", "x&y"]),
    bootOrder=st.integers(1, 5),
    cache=st.sampled_from(["none", "writeback", "writethrough"]),
    io=st.sampled_from(["native", "threads"]),
    errorPolicy=st.sampled_from(["stop", "report", "panic"]),
    shareable=BOOLS,
    dedicatedIOThread=BOOLS,
    blockSize=st.just({"custom": {"logical": 512, "physical": 4096}}),
).flatmap(lambda d: NAMES.map(lambda n: {"name": n, **d}))
SOURCES = st.sampled_from(
    [
        {"containerDisk": {"image": "img:1"}},
        {"persistentVolumeClaim": {"claimName": "c"}},
        {"dataVolume": {"name": "dv"}},
        {"ephemeral": {"persistentVolumeClaim": {"claimName": "c"}}},
        {"emptyDisk": {"capacity": "1Gi"}},
        {"hostDisk": {"path": "/x/y.img", "type": "Disk"}},
        {"cloudInitNoCloud": {"userData": "#cloud-config"}},
        {"cloudInitConfigDrive": {"userData": "#cloud-config"}},
        {"configMap": {"name": "cm"}},
        {"secret": {"secretName": "s"}},
        {"downwardAPI": {}},
        {"serviceAccount": {"serviceAccountName": "sa"}},
        {"downwardMetrics": {}},
        {"sysprep": {"secret": {"name": "s"}}},
        {},
    ]
)
VOLUME = st.tuples(NAMES, SOURCES).map(lambda t: {"name": t[0], **t[1]})
BINDINGS = st.sampled_from(
    [{"bridge": {}}, {"masquerade": {}}, {"sriov": {}}, {"slirp": {}}, {"binding": {"name": "p"}}, {}]
)
INTERFACE = st.tuples(
    NAMES,
    BINDINGS,
    dict_of(
        model=st.sampled_from(["virtio", "e1000", "rtl8139"]),
        state=st.sampled_from(["up", "down", "absent"]),
        acpiIndex=st.integers(0, 3),
        bootOrder=st.integers(1, 5),
        pciAddress=st.sampled_from(["0000:02:01.0", "bad"]),
    ),
).map(lambda t: {"name": t[0], **t[1], **t[2]})
NETWORK = st.tuples(NAMES, st.sampled_from([{"pod": {}}, {"multus": {"networkName": "n"}}])).map(
    lambda t: {"name": t[0], **t[1]}
)
FEATURE = maybe(dict_of(enabled=BOOLS))
DOMAIN = dict_of(
    cpu=dict_of(
        sockets=st.integers(0, 6),
        cores=st.integers(0, 6),
        threads=st.integers(0, 3),
        maxSockets=st.integers(0, 8),
        model=st.sampled_from(["host-model", "host-passthrough", "Haswell", ""]),
        features=st.lists(
            dict_of(
                name=st.sampled_from(["mpx", "invtsc", "vmx"]), policy=st.sampled_from(["require", "disable"])
            ),
            max_size=2,
        ).map(lambda fs: [f for f in fs if "name" in f]),
        dedicatedCpuPlacement=BOOLS,
    ),
    memory=dict_of(guest=QUANTITIES, maxGuest=QUANTITIES, hugepages=st.just({"pageSize": "2Mi"})),
    resources=dict_of(
        requests=dict_of(memory=QUANTITIES, cpu=QUANTITIES), limits=dict_of(memory=QUANTITIES, cpu=QUANTITIES)
    ),
    firmware=dict_of(
        serial=st.just("F-1"),
        bootloader=st.sampled_from(
            [{"bios": {"useSerial": True}}, {"efi": {}}, {"efi": {"secureBoot": False}}]
        ),
        kernelBoot=st.just(
            {"kernelArgs": "quiet", "container": {"image": "k:1", "kernelPath": "/b/vmlinuz"}}
        ),
        acpi=st.sampled_from([{}, {"slicNameRef": "a"}]),
    ),
    features=dict_of(
        acpi=FEATURE,
        apic=FEATURE,
        smm=FEATURE,
        pvspinlock=FEATURE,
        kvm=maybe(dict_of(hidden=BOOLS)),
        hypervPassthrough=FEATURE,
        hyperv=maybe(
            dict_of(
                relaxed=FEATURE,
                synictimer=FEATURE,
                spinlocks=maybe(dict_of(spinlocks=st.just(8191))),
                evmcs=FEATURE,
            )
        ),
    ),
    clock=dict_of(
        utc=maybe(dict_of(offsetSeconds=st.integers(-100, 100))),
        timezone=st.just("UTC"),
        timer=dict_of(rtc=maybe(dict_of(tickPolicy=st.just("catchup"))), hpet=FEATURE, kvm=FEATURE),
    ),
    ioThreadsPolicy=st.sampled_from(["shared", "auto", "supplementalPool", "weird"]),
    ioThreads=st.just({"supplementalPoolThreadCount": 2}),
    chassis=st.just({"serial": "C1"}),
    devices=dict_of(
        disks=st.lists(DISK, max_size=4),
        interfaces=st.lists(INTERFACE, max_size=3),
        inputs=st.lists(
            dict_of(
                name=NAMES,
                type=st.sampled_from(["tablet", "keyboard"]),
                bus=st.sampled_from(["usb", "virtio", "ps2"]),
            ),
            max_size=2,
        ),
        watchdog=maybe(
            st.tuples(NAMES, st.sampled_from([{}, {"i6300esb": {}}, {"diag288": {}}])).map(
                lambda t: {"name": t[0], **t[1]}
            )
        ),
        rng=maybe(st.just({})),
        sound=maybe(dict_of(name=NAMES, model=st.sampled_from(["ich9", "ac97", "sb16"]))),
        tpm=maybe(dict_of(enabled=BOOLS, persistent=BOOLS)),
        autoattachGraphicsDevice=BOOLS,
        autoattachSerialConsole=BOOLS,
        autoattachMemBalloon=BOOLS,
        autoattachPodInterface=BOOLS,
        logSerialConsole=BOOLS,
        blockMultiQueue=BOOLS,
        networkInterfaceMultiqueue=BOOLS,
        useVirtioTransitional=BOOLS,
        disableHotplug=BOOLS,
        clientPassthrough=maybe(st.just({})),
        panicDevices=maybe(st.just([{"model": "isa"}])),
        filesystems=maybe(st.just([{"name": "a", "virtiofs": {}}])),
        downwardMetrics=maybe(st.just({})),
    ),
)
VMI = st.tuples(
    DOMAIN,
    st.lists(VOLUME, max_size=4),
    st.lists(NETWORK, max_size=3),
    dict_of(startStrategy=st.just("Paused"), architecture=st.sampled_from(["amd64", "arm64"])),
).map(
    lambda t: {
        "metadata": {"name": "p", "uid": "u"},
        "spec": {"domain": {"devices": {}, **t[0]}, "volumes": t[1], "networks": t[2], **t[3]},
    }
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _assert_reads_back(domain: Domain) -> None:
    xml = domain.to_xml()
    assert Domain.from_xml(xml).to_xml() == xml


@SETTINGS
@given(VMI, st.sampled_from(["LiveUpdate", "Stage"]))
def test_render_converts_or_raises_its_own_errors(raw: dict[str, Any], strategy: str) -> None:
    try:
        domain = render_domain(raw, RenderOptions(rollout_strategy=strategy))
    except RenderError:
        return  # refused before conversion (schema, parse or defaulting), with its own message
    except ConversionError as err:
        failure: ConversionError = err
    else:
        _assert_reads_back(domain)
        return
    assert failure.field.startswith("spec.")


@SETTINGS
@given(VMI, st.sampled_from(["kvm", "qemu"]), st.booleans())
def test_converter_without_defaults_raises_only_conversion_errors(
    raw: dict[str, Any], domain_type: str, block: bool
) -> None:
    try:
        vmi = VirtualMachineInstance.from_dict(raw)
    except ApiParseError:
        return  # not a VMI at all; the converter never sees these
    context = ConverterContext(domain_type=domain_type, block_volumes=frozenset({"a", "b"} if block else ()))
    try:
        domain = convert_vmi_to_domain(vmi, context)
    except ConversionError as err:
        failure: ConversionError = err
    else:
        assert domain.type == domain_type
        _assert_reads_back(domain)
        return
    assert failure.field.startswith("spec.")
