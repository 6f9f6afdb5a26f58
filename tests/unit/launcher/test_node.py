"""The node's facts and the steps that fit a domain model to them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.domain_pipeline import build_domain, parse_vmi
from kubevirt.virt_launcher.virtwrap.node import (
    NodeFacts,
    accepts_slotless_max_memory,
    choose_disk_io_modes,
    decide_emulation,
    fit_to_node,
    is_preallocated,
    probe_devices,
)


def disk_domain(path: Path, cache: str | None) -> api.Domain:
    disk = api.Disk(
        type="file",
        source=api.DiskSource(file=str(path)),
        driver=api.DiskDriver(name="qemu", cache=cache, io="native"),
    )
    return api.Domain(devices=api.Devices(disks=[disk]))


def test_emulation_is_decided_from_the_flags_and_kvm() -> None:
    assert decide_emulation(force=True, allow=False, kvm=lambda: True)
    assert decide_emulation(force=False, allow=True, kvm=lambda: False)
    assert not decide_emulation(force=False, allow=True, kvm=lambda: True)
    assert not decide_emulation(force=False, allow=False, kvm=lambda: False)


def test_emulation_gives_a_host_cpu_an_emulated_model() -> None:
    domain = api.Domain(type="qemu", cpu=api.CPU(mode="host-model", topology=api.CPUTopology(sockets=1)))
    fit_to_node(domain, NodeFacts(emulation=True))
    assert domain.cpu.mode == "maximum"
    assert domain.cpu.topology is not None
    untouched = api.Domain(type="kvm", cpu=api.CPU(mode="host-model"))
    fit_to_node(untouched, NodeFacts(emulation=False))
    assert untouched.cpu.mode == "host-model"


@pytest.mark.parametrize(
    ("cache", "direct_io", "expected_cache", "expected_io"),
    [
        ("none", False, "writethrough", None),  # cache=none needs O_DIRECT
        (None, True, "none", "native"),
        (None, False, "writethrough", None),
        ("writeback", False, "writeback", "native"),
    ],
)
def test_disk_cache_mode_follows_direct_io_support(
    tmp_path: Path, cache: str | None, direct_io: bool, expected_cache: str, expected_io: str | None
) -> None:
    image = tmp_path / "disk.img"
    image.write_bytes(b"\0" * 512)
    domain = disk_domain(image, cache)
    facts = probe_devices(domain, NodeFacts(), direct_io=lambda path: direct_io)
    assert facts.direct_io == {str(image): direct_io}
    fit_to_node(domain, facts)
    driver = domain.devices.disks[0].driver
    assert driver is not None
    assert (driver.cache, driver.io) == (expected_cache, expected_io)


def test_a_missing_disk_image_keeps_its_cache_mode(tmp_path: Path) -> None:
    domain = disk_domain(tmp_path / "absent.img", None)
    fit_to_node(domain, probe_devices(domain, NodeFacts(), direct_io=lambda path: False))
    assert domain.devices.disks[0].driver.cache is None  # type: ignore[union-attr]


def test_preallocation_is_the_virtual_size_fitting_in_the_allocated_blocks(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.img"
    with sparse.open("wb") as image:
        image.truncate(8 << 20)
    full = tmp_path / "full.img"
    full.write_bytes(b"\1" * (1 << 20))
    # A qcow2 image says its virtual size in its header: 1 GiB, far beyond the few bytes it occupies.
    qcow2 = tmp_path / "disk.qcow2"
    qcow2.write_bytes(b"QFI\xfb" + bytes(20) + (1 << 30).to_bytes(8, "big") + bytes(64))
    assert (is_preallocated(str(sparse)), is_preallocated(str(full)), is_preallocated(str(qcow2))) == (
        False,
        True,
        False,
    )
    assert not is_preallocated(str(tmp_path / "absent.img"))
    assert not is_preallocated(str(tmp_path))  # not an image file


@pytest.mark.parametrize(
    ("source", "cache", "io", "preallocated", "expected"),
    [
        (api.DiskSource(dev="/dev/pvc"), "none", None, False, "native"),  # a block device
        (api.DiskSource(file="/img"), "none", None, True, "native"),  # a preallocated image
        (api.DiskSource(file="/img"), "none", None, False, None),  # sparse: the default threads
        (api.DiskSource(dev="/dev/pvc"), "writethrough", None, False, None),  # native needs O_DIRECT
        (api.DiskSource(dev="/dev/pvc"), "none", "threads", False, "threads"),  # the VMI's choice stays
        (api.DiskSource(), "none", None, False, None),  # an empty CD-ROM
    ],
)
def test_io_mode_is_native_where_kubevirt_chooses_it(
    source: api.DiskSource, cache: str, io: str | None, preallocated: bool, expected: str | None
) -> None:
    disk = api.Disk(source=source, driver=api.DiskDriver(name="qemu", cache=cache, io=io))
    domain = api.Domain(devices=api.Devices(disks=[disk]))
    choose_disk_io_modes(domain, NodeFacts(preallocated={"/img": preallocated}))
    assert disk.driver is not None
    assert disk.driver.io == expected


def test_tap_mtu_is_adopted(tmp_path: Path) -> None:
    (tmp_path / "tap0").mkdir()
    (tmp_path / "tap0" / "mtu").write_text("1400\n")
    interface = api.Interface(type="ethernet", target=api.InterfaceTarget(dev="tap0", managed="no"))
    domain = api.Domain(devices=api.Devices(interfaces=[interface]))
    facts = probe_devices(domain, NodeFacts(), sys_class_net=tmp_path)
    assert facts.tap_mtus == {"tap0": 1400}
    fit_to_node(domain, facts)
    assert interface.mtu == api.MTU(size="1400")


def hotplug_room_domain(slots: int, numa: api.NUMA | None = None) -> api.Domain:
    return api.Domain(
        memory=api.Memory(unit="b", value=1 << 30),
        max_memory=api.MaxMemory(unit="b", slots=slots, value=2 << 30),
        vcpu=api.VCPU(placement="static", cpus=4),
        cpu=api.CPU(mode="host-model", numa=numa),
    )


def test_slotless_memory_hotplug_room_gets_a_slot_and_a_numa_cell_only_where_libvirt_wants_slots() -> None:
    assert not accepts_slotless_max_memory(9_000_000)
    assert accepts_slotless_max_memory(10_000_000)
    kept = hotplug_room_domain(slots=0)
    fit_to_node(kept, NodeFacts(slotless_max_memory=True))
    assert kept.max_memory == api.MaxMemory(unit="b", slots=0, value=2 << 30)  # KubeVirt's, unchanged
    assert kept.cpu.numa is None

    slotted = hotplug_room_domain(slots=0)
    fit_to_node(slotted, NodeFacts(slotless_max_memory=False))
    assert slotted.max_memory == api.MaxMemory(unit="b", slots=1, value=2 << 30)
    # one cell with every vCPU, hotpluggable ones included, and the boot memory
    assert slotted.cpu.numa == api.NUMA(cells=[api.NUMACell(id="0", cpus="0-3", memory=1 << 20, unit="KiB")])

    own_cells = api.NUMA(
        cells=[api.NUMACell(id="0", cpus="0-3", memory=1 << 20, unit="KiB", mem_access="shared")]
    )
    memfd = hotplug_room_domain(slots=0, numa=own_cells)
    fit_to_node(memfd, NodeFacts(slotless_max_memory=False))
    assert memfd.cpu.numa is own_cells
    assert len(own_cells.cells) == 1

    with_slots = hotplug_room_domain(slots=4)
    fit_to_node(with_slots, NodeFacts(slotless_max_memory=False))
    assert with_slots.max_memory is not None
    assert with_slots.max_memory.slots == 4
    assert with_slots.cpu.numa is None

    no_room = api.Domain(memory=api.Memory(unit="b", value=1 << 30))
    fit_to_node(no_room, NodeFacts(slotless_max_memory=False))
    assert no_room.max_memory is None
    assert no_room.cpu.numa is None


def test_node_facts_travel_as_json() -> None:
    facts = NodeFacts(
        emulation=True,
        slotless_max_memory=False,
        ovmf_dir="/fw",
        direct_io={"/d": True},
        preallocated={"/d": False},
        tap_mtus={"t": 9000},
        block_volumes=frozenset({"pvc1"}),
    )
    assert NodeFacts.from_json(facts.to_json()) == facts


def test_block_volumes_become_block_disks() -> None:
    vmi = parse_vmi(
        json.dumps(
            {
                "metadata": {"name": "v", "namespace": "ns"},
                "spec": {
                    "domain": {"devices": {"disks": [{"name": "pvc1"}, {"name": "pvc2"}]}},
                    "volumes": [
                        {"name": "pvc1", "persistentVolumeClaim": {"claimName": "a"}},
                        {"name": "pvc2", "persistentVolumeClaim": {"claimName": "b"}},
                    ],
                },
            }
        )
    )
    disks = build_domain(vmi, None, NodeFacts(block_volumes=frozenset({"pvc1"}))).devices.disks
    assert (disks[0].type, disks[0].source.dev) == ("block", "/dev/pvc1")
    assert (disks[1].type, disks[1].source.file) == (
        "file",
        "/var/run/kubevirt-private/vmi-disks/pvc2/disk.img",
    )
