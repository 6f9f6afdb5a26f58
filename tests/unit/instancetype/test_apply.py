"""Instance types and preferences applied to a VMI spec: values, precedence and conflicts."""

from __future__ import annotations

from array import array
from typing import Any

import pytest

from kubevirt.instancetype import apply_to_vmi, conflicts_message
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceSpec
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec
from kubevirt_api.k8s.meta_v1 import ObjectMeta
from kubevirt_api.resource import Quantity

BASE = "spec.template.spec"


def instancetype(**extra: Any) -> VirtualMachineInstancetypeSpec:
    spec: dict[str, Any] = {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}}
    for key, value in extra.items():
        if key in spec:
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = value
    return VirtualMachineInstancetypeSpec.from_dict(spec)


def preference(spec: dict[str, Any]) -> VirtualMachinePreferenceSpec:
    return VirtualMachinePreferenceSpec.from_dict(spec)


def vmi_spec(domain: dict[str, Any] | None = None, **rest: Any) -> VirtualMachineInstanceSpec:
    return VirtualMachineInstanceSpec.from_dict({"domain": {"devices": {}, **(domain or {})}, **rest})


def apply(
    it: VirtualMachineInstancetypeSpec | None,
    pref: VirtualMachinePreferenceSpec | None,
    spec: VirtualMachineInstanceSpec,
    meta: ObjectMeta | None = None,
) -> tuple[list[str], dict[str, Any], ObjectMeta]:
    metadata = meta or ObjectMeta()
    conflicts = apply_to_vmi(BASE, it, pref, spec, metadata)
    return [c.path for c in conflicts], spec.to_dict(), metadata


def test_instancetype_sizes_an_empty_domain() -> None:
    it = instancetype(
        cpu={"model": "Haswell", "dedicatedCPUPlacement": True, "maxSockets": 8},
        memory={"hugepages": {"pageSize": "2Mi"}, "maxGuest": "4Gi"},
        nodeSelector={"zone": "a"},
        schedulerName="custom",
        ioThreadsPolicy="auto",
        gpus=[{"name": "gpu1", "deviceName": "nvidia.com/A100"}],
    )
    conflicts, out, _ = apply(it, None, vmi_spec())
    assert conflicts == []
    assert out["domain"]["cpu"] == {
        "sockets": 2,
        "cores": 1,
        "threads": 1,
        "maxSockets": 8,
        "model": "Haswell",
        "dedicatedCpuPlacement": True,
    }
    assert out["domain"]["memory"] == {"guest": "1Gi", "hugepages": {"pageSize": "2Mi"}, "maxGuest": "4Gi"}
    assert out["nodeSelector"] == {"zone": "a"}
    assert out["schedulerName"] == "custom"
    assert out["domain"]["ioThreadsPolicy"] == "auto"
    assert out["domain"]["devices"]["gpus"] == [{"name": "gpu1", "deviceName": "nvidia.com/A100"}]
    assert "resources" not in out["domain"]


def test_every_owned_field_the_vm_sets_is_a_conflict() -> None:
    it = instancetype(
        cpu={"model": "Haswell"},
        nodeSelector={"zone": "a"},
        ioThreadsPolicy="auto",
        hostDevices=[{"name": "h", "deviceName": "d"}],
    )
    spec = vmi_spec(
        {
            "cpu": {"cores": 2, "model": "host-model"},
            "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}},
            "ioThreadsPolicy": "shared",
            "devices": {"hostDevices": [{"name": "x", "deviceName": "y"}]},
        },
        nodeSelector={"zone": "b"},
    )
    conflicts, _, _ = apply(it, None, spec)
    assert conflicts == [
        f"{BASE}.nodeSelector",
        f"{BASE}.domain.resources.requests.cpu",
        f"{BASE}.domain.cpu.cores",
        f"{BASE}.domain.cpu.model",
        f"{BASE}.domain.resources.limits.memory",
        f"{BASE}.domain.ioThreadsPolicy",
        f"{BASE}.domain.devices.hostDevices",
    ]


def test_conflict_messages_name_the_fields() -> None:
    spec = vmi_spec({"memory": {"guest": "2Gi"}})
    conflicts = apply_to_vmi(BASE, instancetype(), None, spec, ObjectMeta())
    assert [c.message for c in conflicts] == [
        "VM field(s) spec.template.spec.domain.memory conflicts with selected instance type"
    ]
    assert conflicts_message(conflicts) == conflicts[0].message


def test_fields_the_instancetype_leaves_open_stay_with_the_vm() -> None:
    # Without a model in the instance type the VM's model is kept; no memory request without overcommit.
    spec = vmi_spec({"cpu": {"model": "host-passthrough", "numa": {"guestMappingPassthrough": {}}}})
    conflicts, out, _ = apply(instancetype(), None, spec)
    assert conflicts == []
    assert out["domain"]["cpu"]["model"] == "host-passthrough"
    assert out["domain"]["cpu"]["numa"] == {"guestMappingPassthrough": {}}


def _float32(value: float) -> float:
    return array("f", [value])[0]


@pytest.mark.parametrize(("guest", "percent"), [("1Gi", 25), ("3G", 33), ("1537Mi", 7)])
def test_overcommit_requests_less_memory_than_the_guest_gets(guest: str, percent: int) -> None:
    conflicts, out, _ = apply(
        instancetype(memory={"guest": guest, "overcommitPercent": percent}), None, vmi_spec()
    )
    assert conflicts == []
    assert out["domain"]["memory"]["guest"] == guest
    # KubeVirt multiplies in single precision.
    kept = _float32(1 - _float32(_float32(percent) / 100))
    expected = int(_float32(_float32(Quantity(guest).value()) * kept))
    request = Quantity(out["domain"]["resources"]["requests"]["memory"])
    assert request.value() == expected
    assert request.value() < Quantity(guest).value()


def test_overcommit_of_a_binary_guest_keeps_binary_units() -> None:
    _, out, _ = apply(instancetype(memory={"overcommitPercent": 25}), None, vmi_spec())
    assert out["domain"]["resources"]["requests"]["memory"] == "768Mi"


@pytest.mark.parametrize(
    ("cpu_preference", "ratio", "topology"),
    [
        ({"preferredCPUTopology": "cores"}, None, (1, 8, 1)),
        ({"preferredCPUTopology": "preferThreads"}, None, (1, 1, 8)),
        ({"preferredCPUTopology": "any"}, None, (8, 1, 1)),
        ({"preferredCPUTopology": "spread"}, None, (4, 2, 1)),
        ({"preferredCPUTopology": "spread"}, 4, (2, 4, 1)),
        ({"preferredCPUTopology": "spread", "spreadOptions": {"across": "CoresThreads"}}, None, (1, 4, 2)),
        (
            {
                "preferredCPUTopology": "spread",
                "spreadOptions": {"across": "SocketsCoresThreads", "ratio": 2},
            },
            None,
            (2, 2, 2),
        ),
    ],
)
def test_preferred_topology_shapes_the_guest_cpus(
    cpu_preference: dict[str, Any], ratio: int | None, topology: tuple[int, int, int]
) -> None:
    pref: dict[str, Any] = {"cpu": cpu_preference}
    if ratio is not None:
        pref["preferSpreadSocketToCoreRatio"] = ratio
    _, out, _ = apply(instancetype(cpu={"guest": 8}), preference(pref), vmi_spec())
    cpu = out["domain"]["cpu"]
    assert (cpu["sockets"], cpu["cores"], cpu["threads"]) == topology


def test_a_single_vcpu_is_one_socket_whatever_the_preference() -> None:
    _, out, _ = apply(
        instancetype(cpu={"guest": 1}), preference({"cpu": {"preferredCPUTopology": "cores"}}), vmi_spec()
    )
    assert out["domain"]["cpu"] == {"sockets": 1, "cores": 1, "threads": 1}


def test_preference_fills_only_what_the_vm_leaves_unset() -> None:
    pref = preference(
        {
            "devices": {
                "preferredDiskBus": "virtio",
                "preferredCdromBus": "sata",
                "preferredInterfaceModel": "virtio",
                "preferredDiskDedicatedIoThread": True,
                "preferredAutoattachGraphicsDevice": False,
                "preferredRng": {},
            },
            "machine": {"preferredMachineType": "pc-q35-rhel9.2.0"},
            "preferredTerminationGracePeriodSeconds": 15,
            "clock": {"preferredClockOffset": {"utc": {}}},
        }
    )
    spec = vmi_spec(
        {
            "devices": {
                "disks": [
                    {"name": "root"},
                    {"name": "data", "disk": {"bus": "sata"}},
                    {"name": "iso", "cdrom": {}},
                ],
                "interfaces": [{"name": "default", "model": "e1000"}, {"name": "second"}],
                "autoattachGraphicsDevice": True,
            },
            "machine": {"type": "q35"},
        },
        terminationGracePeriodSeconds=60,
    )
    conflicts, out, _ = apply(None, pref, spec)
    devices = out["domain"]["devices"]
    assert conflicts == []
    assert devices["disks"] == [
        {"name": "root", "disk": {"bus": "virtio"}, "dedicatedIOThread": True},
        {"name": "data", "disk": {"bus": "sata"}},
        {"name": "iso", "cdrom": {"bus": "sata"}},
    ]
    assert [i.get("model") for i in devices["interfaces"]] == ["e1000", "virtio"]
    assert devices["autoattachGraphicsDevice"] is True
    assert devices["rng"] == {}
    assert out["domain"]["machine"] == {"type": "q35"}
    assert out["terminationGracePeriodSeconds"] == 60
    assert out["domain"]["clock"] == {"utc": {}}


def test_masquerade_preference_only_binds_pod_network_interfaces_without_a_binding() -> None:
    pref = preference({"devices": {"preferredInterfaceMasquerade": {}}})
    spec = vmi_spec(
        {"devices": {"interfaces": [{"name": "pod"}, {"name": "multus"}, {"name": "bridged", "bridge": {}}]}},
        networks=[
            {"name": "pod", "pod": {}},
            {"name": "multus", "multus": {"networkName": "net"}},
            {"name": "bridged", "pod": {}},
        ],
    )
    _, out, _ = apply(None, pref, spec)
    assert out["domain"]["devices"]["interfaces"] == [
        {"name": "pod", "masquerade": {}},
        {"name": "multus"},
        {"name": "bridged", "bridge": {}},
    ]


def test_firmware_preferences_pick_one_bootloader() -> None:
    efi = preference({"firmware": {"preferredEfi": {"secureBoot": True}, "preferredUseBios": False}})
    _, out, _ = apply(None, efi, vmi_spec())
    assert out["domain"]["firmware"] == {"bootloader": {"efi": {"secureBoot": True}}}
    bios = preference(
        {"firmware": {"preferredUseBios": True, "preferredUseBiosSerial": True, "preferredEfi": {}}}
    )
    _, out, _ = apply(None, bios, vmi_spec())
    assert out["domain"]["firmware"] == {"bootloader": {"bios": {"useSerial": True}}}
    legacy = preference({"firmware": {"preferredUseEfi": True, "preferredUseSecureBoot": False}})
    _, out, _ = apply(None, legacy, vmi_spec({"firmware": {"serial": "abc"}}))
    assert out["domain"]["firmware"] == {"serial": "abc", "bootloader": {"efi": {"secureBoot": False}}}


def test_acpi_preference_overrides_while_other_features_do_not() -> None:
    pref = preference(
        {
            "features": {
                "preferredAcpi": {"enabled": True},
                "preferredSmm": {"enabled": True},
                "preferredHyperv": {"relaxed": {}, "vapic": {"enabled": True}},
            }
        }
    )
    spec = vmi_spec(
        {"features": {"acpi": {"enabled": False}, "smm": {"enabled": False}, "hyperv": {"vapic": {}}}}
    )
    _, out, _ = apply(None, pref, spec)
    assert out["domain"]["features"] == {
        "acpi": {"enabled": True},
        "smm": {"enabled": False},
        "hyperv": {"relaxed": {}, "vapic": {}},
    }


def test_preferred_cpu_features_are_added_once() -> None:
    pref = preference(
        {"cpu": {"preferredCPUFeatures": [{"name": "vmx"}, {"name": "pcid", "policy": "require"}]}}
    )
    spec = vmi_spec({"cpu": {"features": [{"name": "vmx", "policy": "disable"}]}})
    _, out, _ = apply(None, pref, spec)
    assert out["domain"]["cpu"]["features"] == [
        {"name": "vmx", "policy": "disable"},
        {"name": "pcid", "policy": "require"},
    ]


def test_annotations_instancetype_conflicts_preference_yields() -> None:
    it = instancetype(annotations={"a": "1", "b": "2"})
    pref = preference({"annotations": {"b": "x", "c": "3"}})
    conflicts, _, meta = apply(it, pref, vmi_spec(), ObjectMeta(annotations={"a": "1"}))
    assert conflicts == []
    assert meta.annotations == {"a": "1", "b": "2", "c": "3"}
    conflicts, _, _ = apply(it, pref, vmi_spec(), ObjectMeta(annotations={"a": "other"}))
    assert conflicts == ["annotations.a"]


def test_preference_is_not_applied_when_the_instancetype_conflicts() -> None:
    pref = preference({"preferredSubdomain": "sub"})
    conflicts, out, _ = apply(instancetype(), pref, vmi_spec({"memory": {"guest": "1Gi"}}))
    assert conflicts == [f"{BASE}.domain.memory"]
    assert "subdomain" not in out


def test_nothing_to_apply_leaves_the_spec_alone() -> None:
    spec = vmi_spec({"cpu": {"cores": 3}})
    before = spec.to_dict()
    assert apply_to_vmi(BASE, None, None, spec, ObjectMeta()) == []
    assert spec.to_dict() == before


def test_presence_follows_go_an_empty_map_is_set_an_empty_string_or_list_is_not() -> None:
    it = instancetype(
        nodeSelector={"zone": "a"}, schedulerName="custom", gpus=[{"name": "g", "deviceName": "d"}]
    )
    spec = vmi_spec({"devices": {"gpus": []}}, nodeSelector={}, schedulerName="")
    conflicts, out, _ = apply(it, None, spec)
    assert conflicts == [f"{BASE}.nodeSelector"]
    assert out["schedulerName"] == "custom"
    assert out["domain"]["devices"]["gpus"] == [{"name": "g", "deviceName": "d"}]
