"""The compute container's resources and KubeVirt's memory overhead on inputs beyond the corpus, checked
against the formula written out here in bytes (GetMemoryOverhead and the resource rules of KubeVirt v1.6)."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.virt_config import LauncherSettings
from kubevirt.virt_controller.services import memory_overhead
from kubevirt.virt_controller.services.resources import ResourceRequirements, compute_resources
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.resource import Quantity

Mi = 1024**2
Gi = 1024**3
PROCESSES = (25 + 100 + 25 + 40 + 30) * Mi  # monitor, launcher, virtlogd, virtqemud, qemu
IOTHREAD = 8 * Mi
GRAPHICS = 32 * Mi


def page_tables(requested: int) -> int:
    """1/512 of the requested memory, taken in whole kilobytes rounded up."""
    return -(-requested // 1000) * 1000 // 512


def expected_overhead(requested: int, vcpus: int = 1, *, graphics: bool = True, extra: int = 0) -> int:
    return (
        page_tables(requested) + PROCESSES + 8 * Mi * vcpus + IOTHREAD + (GRAPHICS if graphics else 0) + extra
    )


def vmi(domain: dict[str, Any] | None = None, **spec: Any) -> VirtualMachineInstance:
    body = {"devices": {}, **(domain or {})}
    return VirtualMachineInstance.from_dict(
        {
            "metadata": {"name": "vm", "namespace": "ns", "uid": "u"},
            "spec": {"domain": body, **spec},
            "status": {"runtimeUser": 107},
        }
    )


def memory_vmi(request: str = "1Gi", **domain: Any) -> VirtualMachineInstance:
    return vmi({"resources": {"requests": {"memory": request}}, **domain})


def values(resources: ResourceRequirements) -> dict[str, dict[str, int | float]]:
    def as_number(q: Quantity) -> int | float:
        fraction = q.as_fraction()
        return int(fraction) if fraction.denominator == 1 else float(fraction)

    return {
        "requests": {name: as_number(q) for name, q in resources.requests.items()},
        "limits": {name: as_number(q) for name, q in resources.limits.items()},
    }


def bytes_of(quantity: Quantity) -> int:
    fraction = quantity.as_fraction()
    assert fraction.denominator == 1
    return int(fraction)


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        (memory_vmi(), expected_overhead(Gi)),
        (memory_vmi("1G"), expected_overhead(10**9)),
        (memory_vmi("1001"), expected_overhead(1001)),
        (memory_vmi(devices={"autoattachGraphicsDevice": False}), expected_overhead(Gi, graphics=False)),
        (memory_vmi(devices={"autoattachGraphicsDevice": True}), expected_overhead(Gi)),
        (memory_vmi(cpu={"sockets": 2, "cores": 3, "threads": 2}), expected_overhead(Gi, 12)),
        (memory_vmi(cpu={"threads": 4}), expected_overhead(Gi, 4)),
        (memory_vmi(cpu={"cores": 0}), expected_overhead(Gi, 1)),
        (vmi({"resources": {"requests": {"memory": "1Gi", "cpu": "1500m"}}}), expected_overhead(Gi, 2)),
        (
            vmi({"resources": {"requests": {"memory": "1Gi", "cpu": "1"}, "limits": {"cpu": "3"}}}),
            expected_overhead(Gi, 3),
        ),
        (
            memory_vmi(devices={"tpm": {}, "hostDevices": [{"name": "h", "deviceName": "x/y"}]}),
            expected_overhead(Gi, extra=53 * Mi + Gi),
        ),
        (memory_vmi(devices={"tpm": {"enabled": False}}), expected_overhead(Gi)),
        (memory_vmi(launchSecurity={"sev": {}}), expected_overhead(Gi, extra=256 * Mi)),
        (
            memory_vmi(cpu={"cores": 2, "dedicatedCpuPlacement": True}),
            expected_overhead(Gi, 2, extra=100 * Mi),
        ),
    ],
)
def test_overhead_follows_kubevirts_formula(subject: VirtualMachineInstance, expected: int) -> None:
    assert bytes_of(memory_overhead(subject, "amd64")) == expected


def test_overhead_counts_probes_architecture_and_downward_metrics() -> None:
    probed = vmi(
        {"resources": {"requests": {"memory": "1Gi"}}},
        livenessProbe={"exec": {"command": ["true"]}},
        readinessProbe={"exec": {"command": ["true"]}},
        volumes=[{"name": "metrics", "downwardMetrics": {}}],
    )
    probes = 2 * 10 * Mi + 100 * Mi
    assert bytes_of(memory_overhead(probed, "amd64")) == expected_overhead(Gi, extra=probes + Mi)
    http_probe = vmi({"resources": {"requests": {"memory": "1Gi"}}}, livenessProbe={"httpGet": {"port": 80}})
    assert bytes_of(memory_overhead(http_probe, "amd64")) == expected_overhead(Gi)
    assert bytes_of(memory_overhead(memory_vmi(), "arm64")) == expected_overhead(Gi, extra=128 * Mi)


def test_additional_overhead_ratio_scales_in_whole_kilobytes() -> None:
    plain = expected_overhead(Gi)
    kilobytes = -(-plain // 1000)
    assert bytes_of(memory_overhead(memory_vmi(), "amd64", "2")) == plain + kilobytes * 1000
    assert bytes_of(memory_overhead(memory_vmi(), "amd64", "1.5")) == plain + int(kilobytes * 0.5) * 1000
    assert bytes_of(memory_overhead(memory_vmi(), "amd64", "not-a-number")) == plain


def test_guest_memory_and_shared_cpus() -> None:
    subject = vmi({"memory": {"guest": "2Gi"}, "cpu": {"cores": 3}})
    resources = values(compute_resources(subject, LauncherSettings(), architecture="amd64"))
    # No memory request: the guest memory (overcommit 100%) plus the overhead of a VMI that requested none.
    assert resources["requests"]["memory"] == 2 * Gi + expected_overhead(0, 3)
    assert resources["requests"]["cpu"] == 0.3  # 3 vCPUs at the default allocation ratio of 10
    assert "memory" not in resources["limits"]
    assert "cpu" not in resources["limits"]
    assert resources["requests"]["ephemeral-storage"] == 50 * 10**6
    assert resources["limits"] == {"devices.kubevirt.io/kvm": 1, "devices.kubevirt.io/tun": 1}


def test_overcommit_allocation_ratio_and_cpu_limits() -> None:
    subject = vmi({"memory": {"guest": "3Gi"}, "cpu": {"cores": 4}})
    settings = LauncherSettings(memory_overcommit_percent=150, cpu_allocation_ratio=2)
    resources = values(compute_resources(subject, settings, architecture="amd64", auto_cpu_limits=True))
    assert resources["requests"]["memory"] == 2 * Gi + expected_overhead(0, 4)
    assert resources["requests"]["cpu"] == 2
    assert resources["limits"]["cpu"] == 4


def test_limits_only_request_equals_limit_plus_overhead() -> None:
    subject = vmi({"resources": {"limits": {"memory": "1Gi", "ephemeral-storage": "1G"}}})
    resources = values(compute_resources(subject, LauncherSettings(), architecture="amd64"))
    overhead = expected_overhead(0)  # the VMI itself requests no memory
    assert resources["requests"]["memory"] == Gi + overhead
    assert resources["limits"]["memory"] == Gi + overhead
    assert resources["limits"]["ephemeral-storage"] == 10**9 + 50 * 10**6


def test_overcommitted_overhead_stays_out_of_the_request() -> None:
    subject = vmi({"resources": {"requests": {"memory": "1Gi"}, "overcommitGuestOverhead": True}})
    resources = values(compute_resources(subject, LauncherSettings(), architecture="amd64"))
    assert resources["requests"]["memory"] == Gi


def test_dedicated_cpus_pin_requests_to_limits_with_emulator_thread() -> None:
    subject = vmi(
        {
            "resources": {"requests": {"memory": "1Gi"}},
            "cpu": {"sockets": 1, "cores": 2, "threads": 2, "dedicatedCpuPlacement": True},
        }
    )
    plain = values(compute_resources(subject, LauncherSettings(), architecture="amd64"))
    overhead = expected_overhead(Gi, 4, extra=100 * Mi)
    assert plain["requests"]["cpu"] == plain["limits"]["cpu"] == 4
    assert plain["requests"]["memory"] == plain["limits"]["memory"] == Gi + overhead

    isolated = vmi(
        {
            "resources": {"requests": {"memory": "1Gi"}},
            "cpu": {"cores": 3, "dedicatedCpuPlacement": True, "isolateEmulatorThread": True},
        },
    )
    resources = values(compute_resources(isolated, LauncherSettings(), architecture="amd64"))
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == 4


def test_emulator_thread_completes_to_even_parity_when_annotated() -> None:
    body = {
        "metadata": {
            "name": "vm",
            "namespace": "ns",
            "annotations": {"alpha.kubevirt.io/EmulatorThreadCompleteToEvenParity": ""},
        },
        "spec": {
            "domain": {
                "devices": {},
                "resources": {"requests": {"memory": "1Gi"}},
                "cpu": {"cores": 4, "dedicatedCpuPlacement": True, "isolateEmulatorThread": True},
            }
        },
    }
    resources = values(
        compute_resources(VirtualMachineInstance.from_dict(body), LauncherSettings(), architecture="amd64")
    )
    assert resources["limits"]["cpu"] == 6  # 4 is even: two more CPUs keep the count even


def test_hugepages_take_the_guest_memory() -> None:
    subject = vmi(
        {
            "resources": {"requests": {"memory": "1536Mi"}, "limits": {"memory": "2Gi"}},
            "memory": {"guest": "1Gi", "hugepages": {"pageSize": "1Gi"}},
        }
    )
    resources = values(compute_resources(subject, LauncherSettings(), architecture="amd64"))
    overhead = expected_overhead(1536 * Mi, extra=0)
    assert resources["requests"]["hugepages-1Gi"] == resources["limits"]["hugepages-1Gi"] == Gi
    assert resources["requests"]["memory"] == 512 * Mi + overhead
    assert resources["limits"]["memory"] == Gi + overhead


def test_hugepages_without_guest_use_the_request() -> None:
    subject = vmi(
        {"resources": {"requests": {"memory": "4Gi"}}, "memory": {"hugepages": {"pageSize": "2Mi"}}}
    )
    resources = values(compute_resources(subject, LauncherSettings(), architecture="amd64"))
    assert resources["requests"]["hugepages-2Mi"] == 4 * Gi
    assert resources["requests"]["memory"] == expected_overhead(4 * Gi)


@pytest.mark.parametrize(
    ("devices", "settings", "expected"),
    [
        ({}, LauncherSettings(), {"kvm", "tun"}),
        ({"autoattachPodInterface": False}, LauncherSettings(), {"kvm"}),
        (
            {"interfaces": [{"name": "default", "masquerade": {}}]},
            LauncherSettings(),
            {"kvm", "tun", "vhost-net"},
        ),
        (
            {"interfaces": [{"name": "default", "model": "e1000", "masquerade": {}}]},
            LauncherSettings(),
            {"kvm", "tun"},
        ),
        (
            {"interfaces": [{"name": "default", "masquerade": {}}]},
            LauncherSettings(use_emulation=True),
            {"tun"},
        ),
        (
            {"autoattachVSOCK": True, "autoattachPodInterface": False},
            LauncherSettings(),
            {"kvm", "vhost-vsock"},
        ),
        (
            {"autoattachPodInterface": False, "gpus": [{"name": "g", "deviceName": "nvidia.com/A"}]},
            LauncherSettings(),
            {"kvm", "nvidia.com/A"},
        ),
    ],
)
def test_device_plugin_resources(
    devices: dict[str, Any], settings: LauncherSettings, expected: set[str]
) -> None:
    subject = vmi({"devices": devices, "resources": {"requests": {"memory": "1Gi"}}})
    limits = compute_resources(subject, settings, architecture="amd64").limits
    found = {name.removeprefix("devices.kubevirt.io/") for name in limits if name != "memory"}
    assert found == expected
    assert all(limits[name] == Quantity("1") for name in limits)
