"""The common instance types and preferences virt-operator installs cluster-wide, as KubeVirt v1.6
installs the ``common-instancetypes`` bundle (release v1.4.1): the u1, o1, cx1 and m1 series and the
OS preferences, unless ``spec.configuration.commonInstancetypesDeployment.enabled`` is false.

The objects are built here from tables of the published sizes and a few preference traits, so a
size or an OS is one line; ``hack/generate`` writes them to ``manifests/common-instancetypes/``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubevirt_api.instancetype import constants as names
from kubevirt_api.view import JSON

__all__ = [
    "BUNDLE_VERSION",
    "bundle_for",
    "cluster_instancetypes",
    "cluster_preferences",
    "deploys_common_instancetypes",
]


BUNDLE_VERSION: Final = "v1.4.1"
_PREFIX: Final = "instancetype.kubevirt.io/"
_API_VERSION: Final = f"{names.INSTANCETYPE_GROUP_NAME}/{names.INSTANCETYPE_LATEST_VERSION}"
_VENDOR: Final = {f"{_PREFIX}vendor": "kubevirt.io", f"{_PREFIX}common-instancetypes-version": BUNDLE_VERSION}


# -- instance types --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Series:
    """One series: what all its sizes share, and the sizes as (size, vCPUs, memory)."""

    prefix: str
    display_name: str
    description: str
    labels: Mapping[str, str]
    sizes: tuple[tuple[str, int, str], ...]
    spec: Mapping[str, Any] = field(default_factory=dict)
    # Sizes also offered with 1Gi huge pages (named "<size>1gi").
    one_gi_pages: bool = False
    pinned_sockets: bool = False  # maxSockets = vCPUs: no spare sockets for CPU hotplug


_SIX_TO_EIGHT_X: Final = ("xlarge", "2xlarge", "4xlarge", "8xlarge")


def _ratio(ratio: int, names_from: tuple[str, ...], first_cpus: int) -> tuple[tuple[str, int, str], ...]:
    """Sizes doubling in vCPUs from ``first_cpus``, each with ``ratio`` GiB of memory per vCPU."""
    return tuple(
        (size, first_cpus * 2**i, f"{first_cpus * 2**i * ratio}Gi") for i, size in enumerate(names_from)
    )


_UNIVERSAL_SIZES: Final = (
    ("nano", 1, "512Mi"),
    ("micro", 1, "1Gi"),
    ("small", 1, "2Gi"),
    ("medium", 1, "4Gi"),
    ("2xmedium", 2, "4Gi"),
    *_ratio(4, ("large", *_SIX_TO_EIGHT_X), 2),
)

SERIES: Final = (
    _Series(
        "u1",
        "General Purpose",
        "General purpose workloads. The vCPUs share physical cores with other VMs by time slices; "
        "four GiB of memory per vCPU from large on.",
        {"class": "general.purpose", "icon-pf": "pficon-server-group"},
        _UNIVERSAL_SIZES,
    ),
    _Series(
        "o1",
        "Overcommitted",
        "Like the U series, but the memory each VM asks the node for is half of what the guest sees "
        "(overcommitted by 50 percent).",
        {"class": "overcommitted", "icon-pf": "pficon-virtual-machine"},
        tuple(size for size in _UNIVERSAL_SIZES if size[0] != "2xmedium"),
        {"memory": {"overcommitPercent": 50}},
    ),
    _Series(
        "cx1",
        "Compute Exclusive",
        "Compute intensive workloads. Each vCPU gets a dedicated physical core, the emulator thread "
        "gets its own, the guest sees the host NUMA layout and memory is backed by huge pages. Needs "
        "the CPU manager and huge pages on the nodes.",
        {
            "class": "compute.exclusive",
            "icon-pf": "pficon-registry",
            "dedicatedCPUPlacement": "true",
            "isolateEmulatorThread": "true",
            "numa": "true",
        },
        (("medium", 1, "2Gi"), *_ratio(2, ("large", *_SIX_TO_EIGHT_X), 2)),
        {
            "cpu": {
                "dedicatedCPUPlacement": True,
                "isolateEmulatorThread": True,
                "numa": {"guestMappingPassthrough": {}},
            },
            "ioThreadsPolicy": "auto",
        },
        one_gi_pages=True,
        pinned_sockets=True,
    ),
    _Series(
        "m1",
        "Memory Intensive",
        "Memory intensive workloads: eight GiB of memory per vCPU, backed by huge pages.",
        {"class": "memory.intensive", "icon-pf": "fa-memory"},
        _ratio(8, ("large", *_SIX_TO_EIGHT_X), 2),
        one_gi_pages=True,
    ),
)


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> JSON:
    """``extra`` laid over ``base`` key by key, as fresh copies (the traits are shared tables)."""
    merged: JSON = copy.deepcopy(dict(base))
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[key] = _merge(current, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _instancetype(series: _Series, size: str, cpus: int, memory: str, page_size: str | None) -> JSON:
    suffix = "1gi" if page_size == "1Gi" else ""
    labels = {
        **{f"{_PREFIX}{key}": value for key, value in series.labels.items()},
        f"{_PREFIX}cpu": str(cpus),
        f"{_PREFIX}memory": memory,
        f"{_PREFIX}version": "1",
        **_VENDOR,
    }
    if page_size is not None:
        labels[f"{_PREFIX}hugepages"] = page_size
    else:
        labels[f"{_PREFIX}size"] = size
    spec: JSON = {"cpu": {"guest": cpus}, "memory": {"guest": memory}}
    if page_size is not None:
        spec["memory"]["hugepages"] = {"pageSize": page_size}
    if series.pinned_sockets:
        spec["cpu"]["maxSockets"] = cpus
        labels[f"{_PREFIX}size"] = size
    return {
        "apiVersion": _API_VERSION,
        "kind": names.CLUSTER_INSTANCETYPE_KIND,
        "metadata": {
            "name": f"{series.prefix}.{size}{suffix}",
            "annotations": {
                f"{_PREFIX}description": series.description,
                f"{_PREFIX}displayName": series.display_name,
            },
            "labels": labels,
        },
        "spec": _merge(spec, series.spec),
    }


def cluster_instancetypes() -> list[JSON]:
    """Every VirtualMachineClusterInstancetype of the bundle, sorted by name."""
    objects = []
    for series in SERIES:
        huge = "2Mi" if series.one_gi_pages else None
        for size, cpus, memory in series.sizes:
            objects.append(_instancetype(series, size, cpus, memory, huge))
            if series.one_gi_pages:
                objects.append(_instancetype(series, size, cpus, memory, "1Gi"))
    return sorted(objects, key=lambda obj: str(obj["metadata"]["name"]))


# -- preferences -----------------------------------------------------------------------------------
# Traits a preference is made of; later traits win where they overlap.
_LINUX: Final = {
    "annotations": {"vm.kubevirt.io/os": "linux"},
    "devices": {"preferredDiskBus": "virtio", "preferredInterfaceModel": "virtio", "preferredRng": {}},
}
_IOTHREAD: Final = {"devices": {"preferredDiskDedicatedIoThread": True}}
_EFI: Final = {"firmware": {"preferredEfi": {"secureBoot": False}}}
_SECURE_BOOT: Final = {"features": {"preferredSmm": {}}, "firmware": {"preferredEfi": {"secureBoot": True}}}
_PERSISTENT_EFI: Final = {"firmware": {"preferredEfi": {"persistent": True}}}
_TPM: Final = {"devices": {"preferredTPM": {"persistent": True}}}
_WINDOWS: Final = {
    "annotations": {"vm.kubevirt.io/os": "windows"},
    "clock": {
        "preferredClockOffset": {"utc": {}},
        "preferredTimer": {
            "hpet": {"present": False},
            "hyperv": {},
            "pit": {"tickPolicy": "delay"},
            "rtc": {"tickPolicy": "catchup"},
        },
    },
    "cpu": {"preferredCPUTopology": "sockets"},
    "devices": {
        "preferredAutoattachInputDevice": True,
        "preferredDiskBus": "sata",
        "preferredInterfaceModel": "e1000e",
    },
    "features": {
        "preferredAcpi": {},
        "preferredApic": {},
        "preferredHyperv": {
            **{name: {} for name in ("frequencies", "ipi", "reenlightenment", "relaxed", "reset", "runtime")},
            **{name: {} for name in ("synic", "tlbflush", "vapic", "vpindex")},
            "spinlocks": {"spinlocks": 8191},
            "synictimer": {"direct": {}},
        },
    },
    "preferredTerminationGracePeriodSeconds": 3600,
}
_WINDOWS_VIRTIO: Final = {
    "devices": {
        "preferredDiskBus": "virtio",
        "preferredInterfaceModel": "virtio",
        "preferredInputBus": "virtio",
        "preferredInputType": "tablet",
    }
}
_LEGACY: Final = {
    "annotations": {"vm.kubevirt.io/os": "legacy"},
    "devices": {"preferredDiskBus": "sata", "preferredInterfaceModel": "e1000"},
}


@dataclass(frozen=True)
class _OS:
    name: str
    display_name: str
    os_type: str
    traits: tuple[Mapping[str, Any], ...]
    # Minimum vCPUs and memory the OS vendor publishes; None for generic preferences.
    requires: tuple[int, str] | None = None


def _windows(
    name: str, display: str, requires: tuple[int, str], *extra: Mapping[str, Any]
) -> tuple[_OS, _OS]:
    return (
        _OS(f"windows.{name}", f"Microsoft Windows {display}", "windows", (_WINDOWS, *extra), requires),
        _OS(
            f"windows.{name}.virtio",
            f"Microsoft Windows {display} (virtio)",
            "windows",
            (_WINDOWS, *extra, _WINDOWS_VIRTIO),
            requires,
        ),
    )


_MODERN_WINDOWS: Final = (_SECURE_BOOT, _PERSISTENT_EFI, _TPM)

OPERATING_SYSTEMS: Final = (
    _OS("alpine", "Alpine", "linux", (_LINUX,), (1, "512Mi")),
    _OS("centos.stream9", "CentOS Stream 9", "linux", (_LINUX, _IOTHREAD), (1, "1.5Gi")),
    _OS("centos.stream10", "CentOS Stream 10", "linux", (_LINUX, _IOTHREAD), (1, "1.5Gi")),
    _OS("cirros", "CirrOS", "linux", (_LINUX,), (1, "256Mi")),
    _OS("debian", "Debian", "linux", (_LINUX, _EFI), (1, "512Mi")),
    _OS("fedora", "Fedora", "linux", (_LINUX, _SECURE_BOOT), (1, "2Gi")),
    _OS("legacy", "Legacy guest", "legacy", (_LEGACY,)),
    _OS("linux", "Linux", "linux", (_LINUX,)),
    _OS("linux.efi", "Linux (EFI)", "linux", (_LINUX, _EFI)),
    _OS("opensuse.leap", "openSUSE Leap", "linux", (_LINUX,), (1, "2Gi")),
    _OS("opensuse.tumbleweed", "openSUSE Tumbleweed", "linux", (_LINUX,), (1, "2Gi")),
    _OS("oraclelinux", "Oracle Linux", "linux", (_LINUX, _EFI), (2, "4Gi")),
    _OS("rhel.7", "Red Hat Enterprise Linux 7", "linux", (_LINUX,), (1, "1Gi")),
    _OS("rhel.8", "Red Hat Enterprise Linux 8", "linux", (_LINUX,), (1, "1.5Gi")),
    _OS("rhel.9", "Red Hat Enterprise Linux 9", "linux", (_LINUX, _IOTHREAD, _SECURE_BOOT), (1, "1.5Gi")),
    _OS("rhel.10", "Red Hat Enterprise Linux 10", "linux", (_LINUX, _IOTHREAD, _SECURE_BOOT), (1, "1.5Gi")),
    _OS("sles", "SUSE Linux Enterprise Server", "linux", (_LINUX,), (1, "2Gi")),
    _OS("ubuntu", "Ubuntu", "linux", (_LINUX,), (1, "2Gi")),
    *_windows("10", "10", (1, "2Gi"), _SECURE_BOOT),
    *_windows("11", "11", (2, "4Gi"), *_MODERN_WINDOWS),
    *_windows("2k16", "Server 2016", (1, "2Gi"), _SECURE_BOOT),
    *_windows("2k19", "Server 2019", (1, "2Gi"), _SECURE_BOOT),
    *_windows("2k22", "Server 2022", (1, "2Gi"), *_MODERN_WINDOWS),
    *_windows("2k25", "Server 2025", (1, "2Gi"), *_MODERN_WINDOWS),
)


def _preference(os: _OS) -> JSON:
    spec: JSON = {}
    for trait in os.traits:
        spec = _merge(spec, trait)
    if os.requires is not None:
        cpus, memory = os.requires
        spec["requirements"] = {"cpu": {"guest": cpus}, "memory": {"guest": memory}}
    return {
        "apiVersion": _API_VERSION,
        "kind": names.CLUSTER_PREFERENCE_KIND,
        "metadata": {
            "name": os.name,
            "annotations": {
                "openshift.io/display-name": os.display_name,
                "openshift.io/provider-display-name": "KubeVirt",
            },
            "labels": {f"{_PREFIX}os-type": os.os_type, **_VENDOR},
        },
        "spec": spec,
    }


def cluster_preferences() -> list[JSON]:
    """Every VirtualMachineClusterPreference of the bundle, sorted by name."""
    return sorted((_preference(os) for os in OPERATING_SYSTEMS), key=lambda obj: str(obj["metadata"]["name"]))


def deploys_common_instancetypes(kubevirt: Mapping[str, Any]) -> bool:
    """Whether the KubeVirt CR wants the bundle (KubeVirt's default: yes)."""
    configuration = (kubevirt.get("spec") or {}).get("configuration") or {}
    deployment = configuration.get("commonInstancetypesDeployment") or {}
    return deployment.get("enabled") is not False


def bundle_for(kubevirt: Mapping[str, Any]) -> list[JSON]:
    """What virt-operator installs for this KubeVirt CR: the instance types, then the preferences, or
    nothing when the CR turns the bundle off."""
    if not deploys_common_instancetypes(kubevirt):
        return []
    return [*cluster_instancetypes(), *cluster_preferences()]
