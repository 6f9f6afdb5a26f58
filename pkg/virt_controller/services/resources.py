"""Requests and limits of the virt-launcher pod's containers, with KubeVirt's memory-overhead formula.

The compute container starts from ``spec.domain.resources`` and gets, in KubeVirt's order: the
ephemeral-storage overhead, the device-plugin resources, a memory request when none is given, the CPU
request (or pinning), the memory overhead (or hugepages), and further device-plugin resources.
Quantities follow Go's ``resource.Quantity`` arithmetic, so the values (and mostly the text) match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kubevirt.virt_config import LauncherSettings
from kubevirt.virt_controller.services import vmi_facts
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.core.v1.constants import EMULATOR_THREAD_COMPLETE_TO_EVEN_PARITY
from kubevirt_api.core.v1.domain import GPU, HostDevice
from kubevirt_api.resource import BINARY_SI, DECIMAL_SI, Quantity

KVM_DEVICE = "devices.kubevirt.io/kvm"
TUN_DEVICE = "devices.kubevirt.io/tun"
VHOST_NET_DEVICE = "devices.kubevirt.io/vhost-net"
VHOST_VSOCK_DEVICE = "devices.kubevirt.io/vhost-vsock"
SEV_DEVICE = "devices.kubevirt.io/sev"
PR_HELPER_DEVICE = "devices.kubevirt.io/pr-helper"
EPHEMERAL_STORAGE_OVERHEAD = Quantity("50M")

# The resident memory of the launcher pod's processes, measured by KubeVirt (see GetMemoryOverhead).
_PROCESS_OVERHEADS = tuple(
    Quantity(q)
    for q in (
        "25Mi",  # virt-launcher-monitor
        "100Mi",  # virt-launcher
        "25Mi",  # virtlogd
        "40Mi",  # virtqemud
        "30Mi",  # qemu itself, without guest RAM and page tables
    )
)
_PER_VCPU_OVERHEAD = Quantity("8Mi")
_IOTHREAD_OVERHEAD = Quantity("8Mi")
_GRAPHICS_OVERHEAD = Quantity("32Mi")
_ARM64_OVERHEAD = Quantity("128Mi")
_VFIO_OVERHEAD = Quantity("1Gi")
_DOWNWARD_METRICS_OVERHEAD = Quantity("1Mi")
_EXEC_PROBE_OVERHEAD = Quantity("10Mi")
_ANY_EXEC_PROBE_OVERHEAD = Quantity("100Mi")
_SEV_OVERHEAD = Quantity("256Mi")
_TPM_OVERHEAD = Quantity("53Mi")
_DEDICATED_OVERHEAD = Quantity("100Mi")

ResourceList = dict[str, Quantity]


@dataclass
class ResourceRequirements:
    requests: ResourceList = field(default_factory=dict)
    limits: ResourceList = field(default_factory=dict)
    claims: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.limits:
            out["limits"] = {name: str(value) for name, value in sorted(self.limits.items())}
        if self.requests:
            out["requests"] = {name: str(value) for name, value in sorted(self.requests.items())}
        if self.claims:
            out["claims"] = list(self.claims)
        return out


def _zero(fmt: str = DECIMAL_SI) -> Quantity:
    return Quantity.from_int(0, fmt)  # type: ignore[arg-type]


def _vmi_resources(vmi: VirtualMachineInstance) -> tuple[ResourceList, ResourceList]:
    resources = vmi.spec.domain.resources
    if resources is None:
        return {}, {}
    return dict(resources.requests or {}), dict(resources.limits or {})


def vcpus_for_overhead(vmi: VirtualMachineInstance) -> int:
    """vCPUs from the CPU topology, else the whole CPUs of the limit or request; at least 1."""
    cpu = vmi.spec.domain.cpu
    if cpu is not None:
        count = vmi_facts.vcpu_count(cpu)
    else:
        requests, limits = _vmi_resources(vmi)
        source = limits.get("cpu", requests.get("cpu"))
        count = source.value() if source is not None else 0
    return max(count, 1)


def _has_exec_probe(vmi: VirtualMachineInstance, *, liveness: bool) -> bool:
    probe = vmi.spec.liveness_probe if liveness else vmi.spec.readiness_probe
    return probe is not None and probe.exec is not None


def memory_overhead(
    vmi: VirtualMachineInstance, architecture: str, additional_ratio: str | None = None
) -> Quantity:
    """What the launcher pod needs on top of the guest's memory (KubeVirt's ``GetMemoryOverhead``)."""
    requests, _ = _vmi_resources(vmi)
    requested = requests.get("memory", _zero(BINARY_SI))
    # Page tables: 1/512 of the requested memory, counted in whole kilobytes rounded up.
    overhead = Quantity.from_int(requested.scaled_value(3) * 1000 // 512)
    for quantity in _PROCESS_OVERHEADS:
        overhead += quantity
    overhead += Quantity.from_int(_PER_VCPU_OVERHEAD.value() * vcpus_for_overhead(vmi), BINARY_SI)
    overhead += _IOTHREAD_OVERHEAD
    if vmi_facts.devices(vmi).autoattach_graphics_device is not False:
        overhead += _GRAPHICS_OVERHEAD
    if architecture == "arm64":
        overhead += _ARM64_OVERHEAD
    if vmi_facts.uses_vfio(vmi):
        overhead += _VFIO_OVERHEAD
    if vmi_facts.has_downward_metrics_volume(vmi):
        overhead += _DOWNWARD_METRICS_OVERHEAD
    liveness, readiness = _has_exec_probe(vmi, liveness=True), _has_exec_probe(vmi, liveness=False)
    for has_probe in (liveness, readiness):
        if has_probe:
            overhead += _EXEC_PROBE_OVERHEAD
    if liveness or readiness:
        overhead += _ANY_EXEC_PROBE_OVERHEAD
    if vmi_facts.is_sev(vmi):
        overhead += _SEV_OVERHEAD
    if vmi_facts.has_tpm(vmi):
        overhead += _TPM_OVERHEAD
    if vmi_facts.needs_dedicated_resources(vmi):
        overhead += _DEDICATED_OVERHEAD
    if additional_ratio:
        overhead = _scale_overhead(overhead, additional_ratio)
    return overhead


def _scale_overhead(overhead: Quantity, ratio_text: str) -> Quantity:
    try:
        ratio = float(ratio_text)
    except ValueError:
        return overhead  # KubeVirt logs the bad ratio and keeps the plain overhead
    # KubeVirt adds the truncated float product of the kilobytes, as whole kilobytes.
    addition = int(float(overhead.scaled_value(3)) * (ratio - 1.0))
    return overhead + Quantity.from_int(addition * 1000)


def _go_float(value: float) -> str:
    """Go's ``%g`` of a float64 (shortest round-trip digits), for the values a CPU ratio gives."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _supplemental_io_threads(vmi: VirtualMachineInstance) -> int:
    threads = vmi.spec.domain.io_threads
    return (threads.supplemental_pool_thread_count or 0) if threads is not None else 0


class _ComputeResources:
    """The two layers KubeVirt keeps: values derived by the rules, and the VMI's own (which win)."""

    def __init__(self, vmi: VirtualMachineInstance) -> None:
        self.vm_requests, self.vm_limits = _vmi_resources(vmi)
        self.calc_requests: ResourceList = {}
        self.calc_limits: ResourceList = {}
        self.claims: list[dict[str, str]] = []

    def merged(self) -> ResourceRequirements:
        return ResourceRequirements(
            requests={**self.calc_requests, **self.vm_requests},
            limits={**self.calc_limits, **self.vm_limits},
            claims=list(self.claims),
        )

    def request_device(self, name: str) -> None:
        """One more unit of a device-plugin resource, in requests and limits."""
        merged = self.merged()
        for source, target in ((merged.limits, self.calc_limits), (merged.requests, self.calc_requests)):
            current = source.get(name)
            source[name] = (current + Quantity.from_int(1)) if current is not None else Quantity.from_int(1)
            target.update(source)

    def add_claim(self, name: str, request: str) -> None:
        if all(claim["name"] != name for claim in self.claims):
            self.claims.append({"name": name, "request": request})


def compute_resources(
    vmi: VirtualMachineInstance,
    settings: LauncherSettings,
    *,
    architecture: str,
    auto_cpu_limits: bool = False,
    gpus_with_dra: bool = False,
    host_devices_with_dra: bool = False,
) -> ResourceRequirements:
    """The compute container's requests and limits (KubeVirt's ResourceRenderer with its VMI rules)."""
    res = _ComputeResources(vmi)
    _add_ephemeral_storage(res)
    res.vm_limits.update(_virtualization_devices(vmi, settings.use_emulation))
    overhead = memory_overhead(vmi, architecture, settings.additional_guest_memory_overhead_ratio)
    requests, _ = _vmi_resources(vmi)
    if requests.get("memory", _zero()).is_zero():
        _default_memory_request(vmi, res, settings.memory_overcommit_percent)
    if vmi.is_cpu_dedicated():
        _pin_cpus(vmi, res)
    else:
        _share_cpus(vmi, res, settings.cpu_allocation_ratio, auto_cpu_limits)
    if vmi_facts.has_hugepages(vmi):
        _hugepages(vmi, res, overhead)
    else:
        _add_memory_overhead(vmi, res, overhead)
    devices = vmi_facts.devices(vmi)
    _request_host_devices(res, devices.gpus or [], with_dra=gpus_with_dra)
    _request_host_devices(res, devices.host_devices or [], with_dra=host_devices_with_dra)
    if vmi_facts.is_sev(vmi):
        res.request_device(SEV_DEVICE)
    if vmi_facts.has_persistent_reservation(vmi):
        res.request_device(PR_HELPER_DEVICE)
    return res.merged()


def _request_host_devices(
    res: _ComputeResources, requested: Sequence[GPU | HostDevice], *, with_dra: bool
) -> None:
    """Device-plugin resources by name; with DRA, resource claims for those naming a claim instead."""
    for device in requested:
        has_claim = device.claim_name is not None or device.request_name is not None
        if device.device_name and not has_claim:
            res.request_device(device.device_name)
    for device in requested if with_dra else []:
        if not device.device_name and device.claim_name and device.request_name:
            res.add_claim(device.claim_name, device.request_name)


def _add_ephemeral_storage(res: _ComputeResources) -> None:
    current = res.vm_requests.get("ephemeral-storage")
    res.vm_requests["ephemeral-storage"] = (
        current + EPHEMERAL_STORAGE_OVERHEAD if current is not None else EPHEMERAL_STORAGE_OVERHEAD
    )
    limit = res.vm_limits.get("ephemeral-storage")
    if limit is not None:
        res.vm_limits["ephemeral-storage"] = limit + EPHEMERAL_STORAGE_OVERHEAD


def _virtualization_devices(vmi: VirtualMachineInstance, use_emulation: bool) -> ResourceList:
    devices: ResourceList = {}
    if vmi_facts.needs_tun_device(vmi):
        devices[TUN_DEVICE] = Quantity("1")
    if vmi_facts.wants_virtio_net_device(vmi) and not use_emulation:
        devices[VHOST_NET_DEVICE] = Quantity("1")
    if not use_emulation:
        devices[KVM_DEVICE] = Quantity("1")
    if vmi_facts.autoattaches_vsock(vmi):
        devices[VHOST_VSOCK_DEVICE] = Quantity("1")
    return devices


def _default_memory_request(vmi: VirtualMachineInstance, res: _ComputeResources, overcommit: int) -> None:
    """No memory request: the limit, else the guest memory (or one huge page) less the overcommit."""
    limit = res.vm_limits.get("memory")
    request = res.vm_requests.get("memory")
    if limit is not None and not limit.is_zero() and (request is None or request.is_zero()):
        res.vm_requests["memory"] = limit
    if "memory" in res.vm_requests:
        return
    memory_spec = vmi.spec.domain.memory
    memory: Quantity | None = None
    if memory_spec is not None and memory_spec.guest is not None:
        memory = memory_spec.guest
    elif memory_spec is not None and memory_spec.hugepages is not None:
        try:
            memory = Quantity(memory_spec.hugepages.page_size or "")
        except ValueError:
            memory = None
    if memory is None or memory.value() <= 0:
        return
    if overcommit == 100:
        res.vm_requests["memory"] = memory
    else:
        res.vm_requests["memory"] = Quantity.from_int(memory.value() * 100 // overcommit, memory.format)


def _share_cpus(vmi: VirtualMachineInstance, res: _ComputeResources, ratio: int, with_limits: bool) -> None:
    cpu = vmi.spec.domain.cpu
    vcpus = vmi_facts.vcpu_count(cpu) if cpu is not None else 1
    total = vcpus + _supplemental_io_threads(vmi)
    if total == 0 or ratio <= 0:
        return
    value = total / ratio
    text = _go_float(value) if value >= 1 else _go_float(value * 1000) + "m"
    res.calc_requests["cpu"] = Quantity(text)
    if with_limits:
        res.calc_limits["cpu"] = Quantity(str(total))


def _pin_cpus(vmi: VirtualMachineInstance, res: _ComputeResources) -> None:
    cpu = vmi.spec.domain.cpu
    assert cpu is not None  # dedicated placement is a CPU field
    vcpus = vmi_facts.vcpu_count(cpu)
    io_threads = _supplemental_io_threads(vmi)
    if vcpus != 0:
        res.vm_limits["cpu"] = Quantity.from_int(vcpus + io_threads, BINARY_SI)
        res.vm_requests["cpu"] = Quantity.from_int(vcpus + io_threads, BINARY_SI)
    else:
        extra = Quantity.from_int(io_threads, BINARY_SI)
        for resources in (res.vm_limits, res.vm_requests):
            if "cpu" in resources:
                resources["cpu"] = resources["cpu"] + extra
    if cpu.isolate_emulator_thread:
        domain = vmi.spec.domain
        pool = domain.io_threads_policy == "supplementalPool"
        additional = _supplemental_io_threads(vmi) if pool else 0
        limit = res.vm_limits.get("cpu", _zero())
        emulator = 1
        if EMULATOR_THREAD_COMPLETE_TO_EVEN_PARITY in vmi_facts.vmi_annotations(vmi) and (
            (limit.value() + additional) % 2 == 0
        ):
            emulator = 2
        res.vm_limits["cpu"] = limit + Quantity.from_int(emulator, BINARY_SI)
        if "cpu" in res.vm_requests:
            res.vm_requests["cpu"] = res.vm_requests["cpu"] + Quantity.from_int(emulator, BINARY_SI)
    if "memory" in res.vm_requests:
        res.vm_limits["memory"] = res.vm_requests["memory"]


def _hugepages(vmi: VirtualMachineInstance, res: _ComputeResources, overhead: Quantity) -> None:
    """Guest memory comes from huge pages; the ordinary memory request keeps only what lies beyond."""
    memory = vmi.spec.domain.memory
    assert memory is not None
    assert memory.hugepages is not None
    resource = f"hugepages-{memory.hugepages.page_size or ''}"
    request = res.vm_requests.get("memory", _zero(BINARY_SI))
    guest = memory.guest
    pages = guest if guest is not None and request.value() > guest.value() else request
    res.calc_requests[resource] = pages
    res.calc_limits[resource] = pages
    request_extra = Quantity.from_scaled(0, 3)
    limit_extra = Quantity.from_scaled(0, 3)
    if guest is not None:
        limit = res.vm_limits.get("memory", _zero(BINARY_SI))
        if request.value() > guest.value():
            request_extra = request_extra + request - guest
        if limit.value() > guest.value():
            limit_extra = limit_extra + limit - guest
    res.vm_requests["memory"] = request_extra + overhead
    if "memory" in res.vm_limits:
        res.vm_limits["memory"] = limit_extra + overhead


def _add_memory_overhead(vmi: VirtualMachineInstance, res: _ComputeResources, overhead: Quantity) -> None:
    request = res.vm_requests.get("memory", _zero())
    resources = vmi.spec.domain.resources
    if not (resources is not None and resources.overcommit_guest_overhead):
        request = request + overhead
    res.vm_requests["memory"] = request
    if "memory" in res.vm_limits:
        res.vm_limits["memory"] = res.vm_limits["memory"] + overhead


# -- the support containers -------------------------------------------------------------------------


def _fixed(requests: dict[str, str], limits: dict[str, str], dedicated: bool) -> ResourceRequirements:
    parsed_limits = {name: Quantity(value) for name, value in limits.items()}
    if dedicated:
        parsed_requests = {name: parsed_limits[name] for name in ("cpu", "memory")}
        parsed_requests.update(
            {name: Quantity(value) for name, value in requests.items() if name not in ("cpu", "memory")}
        )
    else:
        parsed_requests = {name: Quantity(value) for name, value in requests.items()}
    return ResourceRequirements(requests=parsed_requests, limits=parsed_limits)


def guest_console_log_resources(vmi: VirtualMachineInstance) -> ResourceRequirements:
    return _fixed(
        {"cpu": "5m", "memory": "35M"},
        {"cpu": "15m", "memory": "60M"},
        vmi_facts.needs_dedicated_resources(vmi),
    )


def container_disk_binary_resources(vmi: VirtualMachineInstance) -> ResourceRequirements:
    """The init container copying the container-disk binary (KubeVirt's init container resources)."""
    if vmi_facts.needs_dedicated_resources(vmi):
        return _fixed({}, {"cpu": "10m", "memory": "40M"}, True)
    return _fixed({"cpu": "10m", "memory": "1M"}, {"cpu": "100m", "memory": "40M"}, False)


def container_disk_resources(vmi: VirtualMachineInstance) -> ResourceRequirements:
    return _fixed(
        {"cpu": "1m", "memory": "1M", "ephemeral-storage": str(EPHEMERAL_STORAGE_OVERHEAD)},
        {"cpu": "10m", "memory": "40M"},
        vmi_facts.needs_dedicated_resources(vmi),
    )


def virtiofs_resources(vmi: VirtualMachineInstance) -> ResourceRequirements:
    return _fixed(
        {"cpu": "10m", "memory": "1M"},
        {"cpu": "100m", "memory": "80M"},
        vmi_facts.needs_dedicated_resources(vmi),
    )


__all__ = [
    "KVM_DEVICE",
    "TUN_DEVICE",
    "VHOST_NET_DEVICE",
    "VHOST_VSOCK_DEVICE",
    "ResourceRequirements",
    "compute_resources",
    "container_disk_binary_resources",
    "container_disk_resources",
    "guest_console_log_resources",
    "memory_overhead",
    "vcpus_for_overhead",
    "virtiofs_resources",
]
