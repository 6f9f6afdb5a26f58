"""Converter behaviour beyond the conformance cases, one configurator concern at a time."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.virt_launcher.virtwrap.api import Domain
from kubevirt.virt_launcher.virtwrap.converter import ConversionError, ConverterContext, convert_vmi_to_domain
from kubevirt.virtctl.offline_vmi import default_vmi
from kubevirt.virtctl.render import options_from_flags
from kubevirt_api.core.v1 import TopologyHints, VirtualMachineInstance

BASE: dict[str, Any] = {
    "metadata": {"name": "vm", "namespace": "ns", "uid": "u-1"},
    "spec": {
        "domain": {
            "resources": {"requests": {"memory": "512Mi"}},
            "devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}]},
        },
        "volumes": [{"name": "root", "containerDisk": {"image": "example/img:1"}}],
    },
}


def vmi_dict(**changes: Any) -> dict[str, Any]:
    """The base VMI with ``domain``, ``devices``, ``spec`` or ``metadata`` keys merged in."""
    vmi = copy.deepcopy(BASE)
    spec = vmi["spec"]
    spec["domain"].update(changes.pop("domain", {}))
    spec["domain"]["devices"].update(changes.pop("devices", {}))
    spec.update(changes.pop("spec", {}))
    vmi["metadata"].update(changes.pop("metadata", {}))
    assert not changes
    return vmi


def render(context: ConverterContext | None = None, *, strategy: str = "Stage", **changes: Any) -> Domain:
    vmi = default_vmi(vmi_dict(**changes), options_from_flags([], rollout_strategy=strategy))
    return convert_vmi_to_domain(vmi, context or ConverterContext())


def convert_raw(**changes: Any) -> Domain:
    """Convert without the webhook's defaults (what virt-launcher does with what it is given)."""
    return convert_vmi_to_domain(VirtualMachineInstance.from_dict(vmi_dict(**changes)))


# ---------------------------------------------------------------- disks


def test_device_names_continue_after_z_and_count_per_prefix() -> None:
    disks = [{"name": f"d{i}", "disk": {"bus": "virtio"}} for i in range(28)]
    disks.insert(3, {"name": "s", "disk": {"bus": "sata"}})
    volumes = [{"name": d["name"], "emptyDisk": {"capacity": "1Gi"}} for d in disks]
    domain = render(devices={"disks": disks}, spec={"volumes": volumes})
    devs = [d.target.dev for d in domain.devices.disks]
    assert devs[:5] == ["vda", "vdb", "vdc", "sda", "vdd"]
    assert devs[26:] == ["vdz", "vdaa", "vdab"]


def test_scsi_addresses_serials_and_models_follow_the_device_kind() -> None:
    disks = [
        {"name": "a", "disk": {"bus": "scsi"}, "serial": "S1"},
        {"name": "b", "cdrom": {"bus": "scsi"}, "serial": "S2"},
        {"name": "c", "lun": {"bus": "scsi"}, "serial": "S3"},
        {"name": "d", "cdrom": {"bus": "virtio"}},
    ]
    volumes = [{"name": n, "persistentVolumeClaim": {"claimName": n}} for n in "abcd"]
    a, b, c, d = render(devices={"disks": disks}, spec={"volumes": volumes}).devices.disks
    assert a.address is not None
    assert (a.address.type, a.address.unit) == ("drive", "0")
    assert b.address is None  # KubeVirt gives CD-ROMs no drive address
    assert c.address is not None
    assert c.address.unit == "2"
    assert [x.serial for x in (a, b, c)] == ["S1", None, None]  # only disks carry a serial
    assert d.model is None
    assert a.model is None


@pytest.mark.parametrize(
    ("volume", "discard"),
    [
        ({"persistentVolumeClaim": {"claimName": "x"}}, "unmap"),
        ({"containerDisk": {"image": "i:1"}}, "unmap"),
        ({"cloudInitNoCloud": {"userData": "#cloud-config"}}, None),
        ({"configMap": {"name": "cm"}}, None),
        ({"hostDisk": {"path": "/p/x.img", "type": "Disk"}}, None),
    ],
)
def test_cdrom_discard_depends_on_the_volume(volume: dict[str, Any], discard: str | None) -> None:
    disks = [{"name": "root", "disk": {"bus": "virtio"}}, {"name": "cd", "cdrom": {"bus": "sata"}}]
    volumes = [BASE["spec"]["volumes"][0], {"name": "cd", **volume}]
    cd = render(devices={"disks": disks}, spec={"volumes": volumes}).devices.disks[1]
    assert cd.driver is not None
    assert cd.driver.discard == discard
    assert cd.readonly is not None


def test_empty_cdrom_is_a_raw_block_device_without_source() -> None:
    disks = [{"name": "root", "disk": {"bus": "virtio"}}, {"name": "tray", "cdrom": {"bus": "sata"}}]
    cd = render(devices={"disks": disks}).devices.disks[1]
    assert cd.type == "block"
    assert cd.source == type(cd.source)()
    assert cd.driver is not None
    assert (cd.driver.type, cd.driver.discard, cd.driver.error_policy) == ("raw", "unmap", "stop")


def test_downward_metrics_disk_has_its_own_driver() -> None:
    disks = [
        {"name": "root", "disk": {"bus": "virtio"}},
        {"name": "m", "disk": {"bus": "virtio"}, "cache": "none"},
    ]
    volumes = [BASE["spec"]["volumes"][0], {"name": "m", "downwardMetrics": {}}]
    metrics = render(devices={"disks": disks}, spec={"volumes": volumes}).devices.disks[1]
    assert metrics.source.file == "/var/run/kubevirt-private/downwardapi-disks/vhostmd0"
    assert metrics.readonly is not None
    assert metrics.driver is not None
    assert (metrics.driver.name, metrics.driver.type, metrics.driver.cache) == ("qemu", "raw", None)
    assert metrics.driver.discard is None
    assert metrics.driver.error_policy == "stop"


def test_shareable_disk_needs_cache_none() -> None:
    disks = [{"name": "root", "disk": {"bus": "virtio"}, "shareable": True}]
    disk = render(devices={"disks": disks}).devices.disks[0]
    assert disk.shareable is not None
    assert disk.driver is not None
    assert disk.driver.cache == "none"
    with pytest.raises(ConversionError, match="a sharable disk requires cache = none got: writeback"):
        render(devices={"disks": [{**disks[0], "cache": "writeback"}]})


def test_block_multiqueue_uses_the_vcpus_before_hotplug() -> None:
    domain = render(
        strategy="LiveUpdate",
        domain={"cpu": {"cores": 3}},
        devices={"blockMultiQueue": True, "disks": [{"name": "root", "disk": {"bus": "virtio"}}]},
    )
    assert domain.devices.disks[0].driver is not None
    assert domain.devices.disks[0].driver.queues == 3


def test_bad_pci_address_names_the_disk() -> None:
    with pytest.raises(
        ConversionError, match="failed to configure disk root: failed to parse pci address 1:2"
    ):
        render(devices={"disks": [{"name": "root", "disk": {"bus": "virtio", "pciAddress": "1:2"}}]})


def test_container_disk_without_format_info() -> None:
    vmi = default_vmi(vmi_dict(), options_from_flags([]))
    with pytest.raises(ConversionError, match="no disk info provided for volume root"):
        convert_vmi_to_domain(vmi, ConverterContext(container_disk_formats={}))
    domain = convert_vmi_to_domain(vmi, ConverterContext(container_disk_formats={"root": "raw"}))
    backing = domain.devices.disks[0].backing_store
    assert backing is not None
    assert backing.format is not None
    assert backing.format.type == "raw"


# ---------------------------------------------------------------- IO threads


def test_supplemental_pool_gives_each_virtio_disk_the_pool() -> None:
    disks = [{"name": "root", "disk": {"bus": "virtio"}}, {"name": "s", "disk": {"bus": "sata"}}]
    volumes = [BASE["spec"]["volumes"][0], {"name": "s", "emptyDisk": {"capacity": "1Gi"}}]
    domain = render(
        domain={"ioThreadsPolicy": "supplementalPool", "ioThreads": {"supplementalPoolThreadCount": 3}},
        devices={"disks": disks},
        spec={"volumes": volumes},
    )
    assert domain.iothreads is not None
    assert domain.iothreads.count == 3
    root, sata = domain.devices.disks
    assert root.driver is not None
    assert root.driver.iothreads is not None
    assert [t.id for t in root.driver.iothreads.iothreads] == [1, 2, 3]
    assert sata.driver is not None
    assert sata.driver.iothreads is None


def test_dedicated_scsi_disk_gives_the_controller_a_thread() -> None:
    disks = [
        {"name": "root", "disk": {"bus": "virtio"}},
        {"name": "s", "disk": {"bus": "scsi"}, "dedicatedIOThread": True},
    ]
    volumes = [BASE["spec"]["volumes"][0], {"name": "s", "emptyDisk": {"capacity": "1Gi"}}]
    domain = render(devices={"disks": disks}, spec={"volumes": volumes})
    assert domain.iothreads is not None
    assert domain.iothreads.count == 2
    scsi = next(c for c in domain.devices.controllers if c.type == "scsi")
    assert scsi.driver is not None
    assert (scsi.driver.iothread, scsi.driver.queues) == (1, 1)


def test_supplemental_pool_with_a_dedicated_scsi_disk_gives_the_controller_the_first_thread() -> None:
    disks = [
        {"name": "root", "disk": {"bus": "virtio"}},
        {"name": "s", "disk": {"bus": "scsi"}, "dedicatedIOThread": True},
    ]
    volumes = [BASE["spec"]["volumes"][0], {"name": "s", "emptyDisk": {"capacity": "1Gi"}}]
    domain = render(
        domain={
            "ioThreadsPolicy": "supplementalPool",
            "ioThreads": {"supplementalPoolThreadCount": 2},
            "cpu": {"sockets": 3},
        },
        devices={"disks": disks},
        spec={"volumes": volumes},
    )
    assert domain.iothreads is not None
    assert domain.iothreads.count == 2
    scsi = next(c for c in domain.devices.controllers if c.type == "scsi")
    assert scsi.driver is not None
    assert (scsi.driver.iothread, scsi.driver.queues) == (1, 3)


# ---------------------------------------------------------------- devices


def test_virtio_transitional_models() -> None:
    domain = render(
        devices={"useVirtioTransitional": True, "rng": {}}, spec={"volumes": BASE["spec"]["volumes"]}
    )
    assert domain.devices.disks[0].model == "virtio-transitional"
    assert domain.devices.rng is not None
    assert domain.devices.rng.model == "virtio-transitional"
    assert domain.devices.ballooning is not None
    assert domain.devices.ballooning.model == "virtio-transitional"
    assert {c.model for c in domain.devices.controllers if c.type != "usb"} == {"virtio-transitional"}
    assert domain.devices.interfaces[0].model is not None
    assert domain.devices.interfaces[0].model.type == "virtio-transitional"


def test_vsock_comes_from_the_status_and_stays_non_transitional() -> None:
    vmi = default_vmi(vmi_dict(devices={"useVirtioTransitional": True}), options_from_flags([]))
    assert vmi.status is not None
    vmi.status.vsockcid = 7
    vsock = convert_vmi_to_domain(vmi).devices.vsock
    assert vsock is not None
    assert (vsock.model, vsock.cid.auto, vsock.cid.address) == ("virtio-non-transitional", "no", 7)


def test_autoattach_switches() -> None:
    domain = render(
        devices={
            "autoattachGraphicsDevice": False,
            "autoattachSerialConsole": False,
            "autoattachMemBalloon": False,
        }
    )
    assert domain.devices.video == []
    assert domain.devices.graphics == []
    assert domain.devices.serials == []
    assert domain.devices.consoles == []
    assert "virtio-serial" not in {c.type for c in domain.devices.controllers}
    assert domain.devices.ballooning is not None
    assert (domain.devices.ballooning.model, domain.devices.ballooning.stats) == ("none", None)
    assert domain.devices.ballooning.free_page_reporting is None


def test_serial_console_log_can_be_switched_off() -> None:
    assert render(devices={"logSerialConsole": False}).devices.serials[0].log is None
    assert render().devices.serials[0].log is not None
    assert render(ConverterContext(serial_console_log=False)).devices.serials[0].log is None


def test_inputs_and_usb_controller() -> None:
    usb_model = {c.type: c.model for c in render().devices.controllers}["usb"]
    assert usb_model == "none"
    domain = render(devices={"inputs": [{"name": "t", "type": "tablet", "bus": "virtio"}]})
    assert domain.devices.inputs[0].model == "virtio"
    assert {c.type: c.model for c in domain.devices.controllers}["usb"] == "none"
    domain = render(devices={"inputs": [{"name": "t", "type": "tablet"}]})
    assert domain.devices.inputs[0].bus == "usb"
    assert {c.type: c.model for c in domain.devices.controllers}["usb"] == "qemu-xhci"


def test_unsupported_input_type() -> None:
    with pytest.raises(ConversionError, match="input contains unsupported type keyboard"):
        render(devices={"inputs": [{"name": "k", "type": "keyboard", "bus": "usb"}]})


def test_client_passthrough_adds_four_redirected_usb_devices() -> None:
    domain = render(devices={"clientPassthrough": {}})
    paths = [r.source.path for r in domain.devices.redirs]
    assert paths == [f"/var/run/kubevirt-private/u-1/virt-usbredir-{i}" for i in range(4)]
    assert {c.type: c.model for c in domain.devices.controllers}["usb"] == "qemu-xhci"


def test_sound_tpm_panic_and_watchdog() -> None:
    domain = render(
        devices={
            "sound": {"name": "snd"},
            "tpm": {"persistent": True},
            "panicDevices": [{"model": "pvpanic"}],
            "watchdog": {"name": "wd"},
        }
    )
    assert domain.devices.sound_cards[0].model == "ich9"
    tpm = domain.devices.tpms[0]
    assert (tpm.model, tpm.backend.persistent_state) == ("tpm-crb", "yes")
    assert domain.devices.panic_devices[0].model == "pvpanic"
    watchdog = domain.devices.watchdogs[0]
    assert (watchdog.model, watchdog.action) == ("i6300esb", "reset")
    assert render(devices={"tpm": {"enabled": False}}).devices.tpms == []


def test_watchdog_without_model_cannot_be_converted() -> None:
    with pytest.raises(ConversionError, match="watchdog wd can't be mapped, no watchdog type specified"):
        convert_raw(devices={"watchdog": {"name": "wd"}})


def test_virtiofs_shares_memory() -> None:
    volumes = [*BASE["spec"]["volumes"], {"name": "share", "persistentVolumeClaim": {"claimName": "c"}}]
    domain = render(devices={"filesystems": [{"name": "share", "virtiofs": {}}]}, spec={"volumes": volumes})
    fs = domain.devices.filesystems[0]
    assert fs.source is not None
    assert fs.source.socket == "/var/run/kubevirt/virtiofs-containers/share.sock"
    assert fs.target is not None
    assert fs.target.dir == "share"
    assert domain.memory_backing is not None
    assert domain.memory_backing.access is not None
    assert domain.memory_backing.access.mode == "shared"
    assert domain.memory_backing.source is not None
    assert domain.memory_backing.source.type == "memfd"
    assert domain.cpu.numa is not None
    assert domain.cpu.numa.cells[0].memory == 512 * 1024


def test_hugepages_without_memfd() -> None:
    domain = render(
        metadata={"annotations": {"kubevirt.io/memfd": "false"}},
        domain={"memory": {"hugepages": {"pageSize": "2Mi"}}},
    )
    assert domain.memory_backing is not None
    assert domain.memory_backing.hugepages is not None
    assert domain.memory_backing.source is None
    assert domain.cpu.numa is None


# ---------------------------------------------------------------- network


def test_only_a_positive_acpi_index_is_written() -> None:
    for index in (-1, 0):
        interfaces = [{"name": "default", "masquerade": {}, "acpiIndex": index}]
        networks = [{"name": "default", "pod": {}}]
        domain = convert_raw(devices={"interfaces": interfaces}, spec={"networks": networks})
        assert [i.acpi for i in domain.devices.interfaces] == [None]


def test_interfaces_models_queues_and_states() -> None:
    interfaces = [
        {"name": "a", "masquerade": {}, "acpiIndex": 3, "pciAddress": "0000:02:01.0"},
        {"name": "b", "bridge": {}, "model": "e1000", "bootOrder": 2},
        {"name": "c", "bridge": {}, "state": "absent"},
        {"name": "d", "bridge": {}, "state": "down"},
        {"name": "e", "sriov": {}},
        {"name": "f", "binding": {"name": "tapper"}},
        {"name": "g", "binding": {"name": "other"}},
    ]
    networks = [{"name": n, "multus": {"networkName": n}} for n in "abcdefg"]
    context = ConverterContext(interface_domain_attachment={"f": "tap", "g": ""})
    domain = render(
        context,
        domain={"cpu": {"sockets": 300}},
        devices={"interfaces": interfaces, "networkInterfaceMultiqueue": True},
        spec={"networks": networks},
    )
    by_alias = {i.alias.name: i for i in domain.devices.interfaces if i.alias}
    assert list(by_alias) == ["ua-a", "ua-b", "ua-d", "ua-f"]
    a, b, d = by_alias["ua-a"], by_alias["ua-b"], by_alias["ua-d"]
    assert a.acpi is not None
    assert a.acpi.index == 3
    assert a.address is not None
    assert (a.address.bus, a.address.slot) == ("0x02", "0x01")
    assert a.driver is not None
    assert a.driver.queues == 256
    assert b.model is not None
    assert b.model.type == "e1000"
    assert b.driver is None
    assert b.boot is not None
    assert b.boot.order == 2
    assert b.rom is None
    assert d.link is not None
    assert d.link.state == "down"


def test_missing_network_names_the_interface() -> None:
    with pytest.raises(ConversionError) as failed:
        render(
            devices={"interfaces": [{"name": "x", "bridge": {}}]},
            spec={"networks": [{"name": "y", "pod": {}}]},
        )
    assert failed.value.field == "spec.domain.devices.interfaces[0].name"
    assert failed.value.message == "failed to find network x"


# ---------------------------------------------------------------- cpu, features, clock, firmware


def test_dedicated_cpus_are_pinned_with_a_hint() -> None:
    domain = render(
        ConverterContext(cpu_set=(4, 5, 6, 7)), domain={"cpu": {"cores": 2, "dedicatedCpuPlacement": True}}
    )
    assert domain.cputune is not None
    assert [(p.vcpu, p.cpuset) for p in domain.cputune.vcpupin] == [(0, "4"), (1, "5")]
    assert domain.features is not None
    assert domain.features.kvm is not None
    assert domain.features.kvm.hint_dedicated is not None


def test_undefaulted_cpu_without_model_is_host_model_with_mpx_off_and_dedicated_hint() -> None:
    # What KubeVirt's converter does with a VMI the webhook did not default (no model, no features)
    domain = convert_vmi_to_domain(
        VirtualMachineInstance.from_dict(
            vmi_dict(domain={"cpu": {"cores": 2, "dedicatedCpuPlacement": True}})
        ),
        ConverterContext(cpu_set=(4, 5)),
    )
    assert domain.cpu.mode == "host-model"
    assert [(f.name, f.policy) for f in domain.cpu.features] == [("mpx", "disable")]
    assert domain.features is not None
    assert domain.features.kvm is not None
    assert domain.features.kvm.hint_dedicated is not None
    assert domain.features.kvm.hint_dedicated.state == "on"
    assert convert_raw().cpu.features == []  # no CPU section at all: nothing to switch off


def test_named_model_with_mpx_listed_gets_no_extra_feature() -> None:
    domain = render(domain={"cpu": {"model": "Haswell", "features": [{"name": "mpx", "policy": "require"}]}})
    assert [(f.name, f.policy) for f in domain.cpu.features] == [("mpx", "require")]
    assert render(domain={"cpu": {"model": "host-passthrough"}}).cpu.features == []


def test_hyperv_passthrough_and_its_precedence() -> None:
    domain = render(domain={"features": {"hypervPassthrough": {"enabled": True}}})
    assert domain.features is not None
    assert domain.features.hyperv is not None
    assert domain.features.hyperv.mode == "passthrough"
    both = render(domain={"features": {"hypervPassthrough": {"enabled": True}, "hyperv": {"relaxed": {}}}})
    assert both.features is not None
    assert both.features.hyperv is not None
    assert both.features.hyperv.mode is None
    assert both.features.hyperv.relaxed is not None


def test_hyperv_disabled_spinlocks_keep_their_retries() -> None:
    domain = render(domain={"features": {"hyperv": {"spinlocks": {"enabled": False, "spinlocks": 8191}}}})
    assert domain.features is not None
    assert domain.features.hyperv is not None
    spinlocks = domain.features.hyperv.spinlocks
    assert spinlocks is not None
    assert (spinlocks.state, spinlocks.retries) == ("off", 8191)


def test_clock_timezone_offset_and_timers() -> None:
    domain = render(
        domain={"clock": {"timezone": "Europe/Paris", "timer": {"hpet": {"present": False}, "pit": {}}}}
    )
    assert domain.clock is not None
    assert (domain.clock.offset, domain.clock.timezone, domain.clock.adjustment) == (
        "timezone",
        "Europe/Paris",
        None,
    )
    assert [(t.name, t.present) for t in domain.clock.timers] == [("pit", "yes"), ("hpet", "no")]
    utc = render(domain={"clock": {"utc": {"offsetSeconds": -3600}}}).clock
    assert utc is not None
    assert (utc.offset, utc.adjustment) == ("utc", "-3600")


def test_tsc_frequency_only_for_guests_that_need_it() -> None:
    for features, expected in (([{"name": "invtsc", "policy": "require"}], ["tsc"]), ([], [])):
        vmi = default_vmi(vmi_dict(domain={"cpu": {"features": features}}), options_from_flags([]))
        assert vmi.status is not None
        vmi.status.topology_hints = TopologyHints(tsc_frequency=2_000_000_000)
        clock = convert_vmi_to_domain(vmi).clock
        assert ([t.name for t in clock.timers] if clock else []) == expected
        if clock:
            assert clock.timers[0].frequency == "2000000000"


def test_acpi_tables_come_from_secret_volumes() -> None:
    volumes = [*BASE["spec"]["volumes"], {"name": "lic", "secret": {"secretName": "lic"}}]
    domain = render(domain={"firmware": {"acpi": {"slicNameRef": "lic"}}}, spec={"volumes": volumes})
    assert domain.os.acpi is not None
    assert [(t.type, t.path) for t in domain.os.acpi.tables] == [
        ("slic", "/var/run/kubevirt-private/secret/lic/slic.bin")
    ]
    with pytest.raises(ConversionError, match="Firmware's volume for msdm was not found"):
        render(domain={"firmware": {"acpi": {"msdmNameRef": "nope"}}})


def test_kernel_args_without_container_and_start_paused() -> None:
    domain = render(
        domain={"firmware": {"kernelBoot": {"kernelArgs": "quiet"}}}, spec={"startStrategy": "Paused"}
    )
    assert (domain.os.kernel, domain.os.cmdline) == (None, "quiet")
    assert domain.os.bootmenu is not None
    assert domain.os.bootmenu.timeout == 10000


def test_pod_paths_take_the_last_element_of_a_path_with_a_trailing_slash() -> None:
    # KubeVirt joins filepath.Base of the path, which ignores trailing slashes
    container = {"image": "k:1", "kernelPath": "/boot/vmlinuz/", "initrdPath": "/boot/initrd.img"}
    disks = [{"name": "root", "disk": {"bus": "virtio"}}, {"name": "h", "disk": {"bus": "virtio"}}]
    volumes = [
        BASE["spec"]["volumes"][0],
        {"name": "h", "hostDisk": {"path": "/data/h.img/", "type": "Disk"}},
    ]
    domain = convert_raw(
        domain={"firmware": {"kernelBoot": {"container": container}}},
        devices={"disks": disks},
        spec={"volumes": volumes},
    )
    assert domain.os.kernel == "/var/run/kubevirt/container-disks/kernel-boot/vmlinuz"
    assert domain.os.initrd == "/var/run/kubevirt/container-disks/kernel-boot/initrd.img"
    assert domain.devices.disks[1].source.file == "/var/run/kubevirt-private/vmi-disks/h/h.img"


def test_ignition_annotation_adds_fw_cfg() -> None:
    domain = render(
        metadata={"annotations": {"kubevirt.io/ignitiondata": '{"ignition": {"version": "3.2.0"}}'}}
    )
    assert domain.qemu_commandline is not None
    assert [a.value for a in domain.qemu_commandline.args] == [
        "-fw_cfg",
        "name=opt/com.coreos/config,file=/var/run/libvirt/ignition-dir/ns/vm/data.ign",
    ]
    assert render(metadata={"annotations": {"kubevirt.io/ignitiondata": "{}"}}).qemu_commandline is None


def test_fractional_memory_rounds_down_and_negative_memory_fails() -> None:
    assert render(domain={"memory": {"guest": "1000500m"}}).memory.value == 1000
    with pytest.raises(ConversionError, match="Memory size '-1Gi' must be greater than or equal to 0"):
        convert_raw(domain={"memory": {"guest": "-1Gi"}})


def test_domain_type_comes_from_the_context() -> None:
    assert render(ConverterContext(domain_type="qemu")).type == "qemu"


def test_absurd_topologies_are_refused_not_built() -> None:
    assert (
        convert_raw(domain={"cpu": {"sockets": 100_000}}).vcpu
        == Domain.from_xml('<domain><vcpu placement="static">100000</vcpu></domain>').vcpu
    )
    with pytest.raises(ConversionError) as refused:
        convert_raw(domain={"cpu": {"sockets": 1, "maxSockets": 100_001}})
    assert refused.value.message == (
        "refusing to convert a topology of 100001 vCPUs (sockets=1 maxSockets=100001 cores=1 threads=1)"
    )


def test_machine_type_falls_back_to_the_architecture_default() -> None:
    assert convert_raw().os.type.machine == "q35"
    assert convert_raw(domain={"machine": {"type": "pc-q35-rhel9.4.0"}}).os.type.machine == "pc-q35-rhel9.4.0"
