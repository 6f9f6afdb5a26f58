"""VMI defaulting rules beyond the conformance cases."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from kubevirt.defaults import DefaultingError, set_vmi_defaults
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1 import VirtualMachineInstance

LIVE = ClusterConfig.build()
STAGE = ClusterConfig.build(rollout_strategy="Stage")
FIXED_NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def defaulted(
    domain: dict[str, Any] | None = None, cluster: Any = LIVE, **spec: Any
) -> VirtualMachineInstance:
    domain = {"devices": {}, **(domain or {})}
    vmi = VirtualMachineInstance.from_dict({"metadata": {"name": "x"}, "spec": {"domain": domain, **spec}})
    set_vmi_defaults(vmi, cluster, now=lambda: FIXED_NOW)
    return vmi


def test_hyperv_dependencies_are_switched_on() -> None:
    vmi = defaulted({"features": {"hyperv": {"synictimer": {}, "evmcs": {}}}})
    assert vmi.spec.domain.features is not None
    hyperv = vmi.spec.domain.features.hyperv
    assert hyperv is not None
    assert hyperv.synic is not None
    assert hyperv.synic.enabled is True
    assert hyperv.vpindex is not None
    assert hyperv.vpindex.enabled is True
    assert hyperv.vapic is not None
    assert hyperv.vapic.enabled is True
    assert vmi.spec.domain.cpu is not None
    assert [(f.name, f.policy) for f in vmi.spec.domain.cpu.features or []] == [("vmx", "require")]


def test_a_disabled_dependency_is_left_for_validation() -> None:
    vmi = defaulted({"features": {"hyperv": {"ipi": {}, "vpindex": {"enabled": False}, "synic": {}}}})
    assert vmi.spec.domain.features is not None
    assert vmi.spec.domain.features.hyperv is not None
    hyperv = vmi.spec.domain.features.hyperv
    assert hyperv.vpindex is not None
    assert hyperv.vpindex.enabled is False


def test_a_disabled_evmcs_needs_no_vmx() -> None:
    vmi = defaulted({"features": {"hyperv": {"evmcs": {"enabled": False}}}})
    assert vmi.spec.domain.cpu is not None
    assert vmi.spec.domain.cpu.features is None


def test_a_disabled_dependency_stops_before_the_vmx_requirement() -> None:
    vmi = defaulted({"features": {"hyperv": {"evmcs": {}, "vapic": {"enabled": False}}}})
    assert vmi.spec.domain.cpu is not None
    assert vmi.spec.domain.cpu.features is None


@pytest.mark.parametrize(
    ("cpu", "expected"),
    [
        ({"sockets": 2}, 8),
        ({"sockets": 16, "cores": 8, "threads": 2}, 32),
        ({"sockets": 100, "cores": 2, "threads": 1}, 256),
        ({"sockets": 200}, 800),  # cores and threads stay 0, so KubeVirt's 512 vCPU cap sees 0 vCPUs
        ({"cores": 2}, None),  # sockets stay 0: no CPU hotplug
        ({"sockets": 1, "maxSockets": 3}, 3),
    ],
)
def test_cpu_hotplug_ceiling(cpu: dict[str, int], expected: int | None) -> None:
    vmi = defaulted({"cpu": cpu})
    assert vmi.spec.domain.cpu is not None
    assert vmi.spec.domain.cpu.max_sockets == expected
    assert defaulted({"cpu": cpu}, STAGE).spec.domain.cpu.max_sockets == cpu.get("maxSockets")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("memory", "expected"),
    [
        ({"guest": "2Gi"}, "8Gi"),
        ({"guest": "512Mi"}, None),  # below 1Gi
        ({"guest": "1025Mi"}, None),  # not 2Mi aligned
        ({"guest": "3Gi", "hugepages": {"pageSize": "1Gi"}}, "12Gi"),
        ({"guest": "1030Mi", "hugepages": {"pageSize": "1Gi"}}, None),
        ({"guest": "2Gi", "maxGuest": "3Gi"}, "3Gi"),
    ],
)
def test_memory_hotplug_ceiling(memory: dict[str, Any], expected: str | None) -> None:
    vmi = defaulted({"memory": memory})
    assert vmi.spec.domain.memory is not None
    max_guest = vmi.spec.domain.memory.max_guest
    assert (str(max_guest) if max_guest is not None else None) == expected


def test_no_memory_hotplug_off_amd64() -> None:
    vmi = defaulted({"memory": {"guest": "2Gi"}}, architecture="arm64")
    assert vmi.spec.domain.memory is not None
    assert vmi.spec.domain.memory.max_guest is None
    assert vmi.spec.domain.machine is not None
    assert vmi.spec.domain.machine.type == "virt"


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("reg/img:1.0", "IfNotPresent"),
        ("reg/img:latest", "Always"),
        ("reg/img", "Always"),
        ("reg/img@sha256:abc", "IfNotPresent"),
        ("reg:5000/img", "IfNotPresent"),  # KubeVirt only looks for ':' and '@'
    ],
)
def test_container_disk_pull_policy(image: str, policy: str) -> None:
    vmi = defaulted(volumes=[{"name": "v", "containerDisk": {"image": image}}])
    volume = (vmi.spec.volumes or [])[0]
    assert volume.container_disk is not None
    assert volume.container_disk.image_pull_policy == policy


def test_cpu_topology_from_limits_then_requests() -> None:
    vmi = defaulted({"resources": {"requests": {"cpu": "1500m"}, "limits": {"cpu": "3"}}})
    assert vmi.spec.domain.cpu is not None
    assert (vmi.spec.domain.cpu.sockets, vmi.spec.domain.cpu.cores, vmi.spec.domain.cpu.threads) == (3, 1, 1)
    vmi = defaulted({"resources": {"limits": {"cpu": "2"}}})
    assert vmi.spec.domain.resources is not None
    assert vmi.spec.domain.resources.requests is not None
    assert str(vmi.spec.domain.resources.requests["cpu"]) == "2"
    vmi = defaulted({"resources": {"requests": {"cpu": "-1"}}})
    assert vmi.spec.domain.cpu is not None
    assert vmi.spec.domain.cpu.sockets == 2**32 - 1


def test_guest_memory_from_the_hugepage_size() -> None:
    vmi = defaulted({"memory": {"hugepages": {"pageSize": "1Gi"}}})
    assert vmi.spec.domain.memory is not None
    assert str(vmi.spec.domain.memory.guest) == "1Gi"
    assert vmi.status is not None
    assert vmi.status.memory is not None


def test_volumes_without_disks_get_sata_disks_unless_used_as_filesystems() -> None:
    vmi = defaulted(
        {"devices": {"filesystems": [{"name": "fs", "virtiofs": {}}]}},
        volumes=[
            {"name": "fs", "persistentVolumeClaim": {"claimName": "a"}},
            {"name": "extra", "persistentVolumeClaim": {"claimName": "b"}},
        ],
    )
    disks = vmi.spec.domain.devices.disks or []
    assert [(d.name, d.disk.bus if d.disk else None) for d in disks] == [("extra", "sata")]


def test_default_network_rules() -> None:
    vmi = defaulted()
    assert [i.name for i in vmi.spec.domain.devices.interfaces or []] == ["default"]
    assert vmi.spec.domain.devices.interfaces
    assert vmi.spec.domain.devices.interfaces[0].bridge is not None
    assert defaulted({"devices": {"autoattachPodInterface": False}}).spec.networks is None
    strict = dataclasses.replace(LIVE, permit_bridge_interface_on_pod_network=False)
    with pytest.raises(DefaultingError, match="Bridge interface is not enabled"):
        defaulted(cluster=strict)


def test_metadata_and_status_from_the_mutator() -> None:
    vmi = VirtualMachineInstance.from_dict(
        {
            "metadata": {
                "name": "x",
                "annotations": {"kubevirt.io/pci-topology-version": "v2"},
                "finalizers": ["foregroundDeleteVirtualMachine"],
            },
            "spec": {"domain": {"devices": {}}},
        }
    )
    set_vmi_defaults(vmi, ClusterConfig.build(feature_gates=["Root"]), now=lambda: FIXED_NOW)
    assert vmi.metadata is not None
    assert vmi.metadata.annotations == {"kubevirt.io/pci-topology-version": "v2"}
    assert vmi.metadata.finalizers == ["foregroundDeleteVirtualMachine"]
    assert vmi.status is not None
    assert vmi.status.runtime_user is None  # root
    assert vmi.status.phase_transition_timestamps is not None
    assert vmi.status.phase_transition_timestamps[0].phase_transition_timestamp == "2026-01-02T03:04:05Z"
    assert vmi.spec.eviction_strategy == "None"
    assert defaulted(
        cluster=dataclasses.replace(LIVE, eviction_strategy="LiveMigrate")
    ).spec.eviction_strategy == ("LiveMigrate")


def test_watchdog_and_buses() -> None:
    vmi = defaulted(
        {
            "devices": {
                "watchdog": {"name": "w"},
                "disks": [{"name": "d", "cdrom": {}}, {"name": "l", "lun": {}}],
            }
        }
    )
    watchdog = vmi.spec.domain.devices.watchdog
    assert watchdog is not None
    assert watchdog.i6300esb is not None
    assert watchdog.i6300esb.action == "reset"
    cd, lun = vmi.spec.domain.devices.disks or []
    assert cd.cdrom is not None
    assert (cd.cdrom.bus, cd.cdrom.readonly, cd.cdrom.tray) == (
        "sata",
        True,
        "closed",
    )
    assert lun.lun is not None
    assert lun.lun.bus == "sata"


def test_memory_hotplug_ceiling_is_written_in_binary_units() -> None:
    vmi = defaulted({"memory": {"guest": "2097152k"}})  # a decimal quantity, 2Mi-aligned, above 1Gi
    assert vmi.spec.domain.memory is not None
    assert str(vmi.spec.domain.memory.max_guest) == "8000Mi"
