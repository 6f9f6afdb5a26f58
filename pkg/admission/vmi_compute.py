"""VMI spec rules about memory, CPU and their resources (part of ``ValidateVirtualMachineInstanceSpec``)."""

from __future__ import annotations

from functools import lru_cache

from kubevirt.admission import causes as c
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import flag, has, integer, items, obj, opt_obj, text
from kubevirt.admission.quantity import FORMAT_ERROR, Quantity, QuantityError, parse, parse_or_zero
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON

_CPU_FEATURE_POLICIES = {"", "force", "require", "optional", "disable", "forbid"}
_ONE_MEGA = 1_000_000
_MUST_BE_POSITIVE = "{} '{}': must be greater than or equal to 0."


@lru_cache(maxsize=4096)
def _value(quantity: Quantity) -> int:
    # Every rule reads the same few quantities; Go's rounding is exact but not cheap.
    return quantity.value()


@lru_cache(maxsize=4096)
def _milli(quantity: Quantity) -> int:
    return quantity.milli_value()


class Resources:
    """The quantities of ``domain.resources`` as Go's ``ResourceList`` accessors return them."""

    def __init__(self, domain: JSON) -> None:
        resources = obj(domain, "resources")
        requests = obj(resources, "requests")
        limits = obj(resources, "limits")
        self.requests_memory = parse_or_zero(requests.get("memory"))
        self.limits_memory = parse_or_zero(limits.get("memory"))
        self.requests_cpu = parse_or_zero(requests.get("cpu"))
        self.limits_cpu = parse_or_zero(limits.get("cpu"))


def _paths(field: Path) -> tuple[Path, Path, Path, Path]:
    resources = field.child("domain", "resources")
    return (
        resources.child("requests", "memory"),
        resources.child("limits", "memory"),
        resources.child("requests", "cpu"),
        resources.child("limits", "cpu"),
    )


def vcpus(cpu: JSON) -> int:
    """``hwutil.GetNumberOfVCPUs``: the product of the non-zero topology counts."""
    total = integer(cpu, "cores")
    for key in ("sockets", "threads"):
        count = integer(cpu, key)
        if count:
            total = count if total == 0 else total * count
    return total


def memory_requests(field: Path, res: Resources) -> list[StatusCause]:
    req, _, _, _ = _paths(field)
    value = _value(res.requests_memory)
    if value < 0:
        return [c.invalid(req, _MUST_BE_POSITIVE.format(req, res.requests_memory))]
    if value > 0 and res.requests_memory.as_fraction() < _ONE_MEGA:
        return [c.invalid(req, f"{req} '{res.requests_memory}': must be greater than or equal to 1M.")]
    return []


def memory_limits(field: Path, res: Resources) -> list[StatusCause]:
    req, lim, _, _ = _paths(field)
    out: list[StatusCause] = []
    if _value(res.limits_memory) < 0:
        out.append(c.invalid(lim, _MUST_BE_POSITIVE.format(lim, res.limits_memory)))
    if _value(res.limits_memory) > 0 and _value(res.requests_memory) > _value(res.limits_memory):
        out.append(
            c.invalid(req, f"{req} '{res.requests_memory}' is greater than {lim} '{res.limits_memory}'")
        )
    return out


def hugepages_requests(field: Path, domain: JSON, res: Resources) -> list[StatusCause]:
    hugepages = opt_obj(obj(domain, "memory"), "hugepages")
    if hugepages is None:
        return []
    req, _, _, _ = _paths(field)
    size_field = field.child("domain", "hugepages", "size")
    page_size = text(hugepages, "pageSize")
    try:
        size = parse(page_size).value()
    except QuantityError:
        return [c.invalid(size_field, f"{size_field} '{page_size}': {FORMAT_ERROR}")]
    memory = _value(res.requests_memory)
    if memory < size:
        message = (
            f"{req} '{res.requests_memory}' must be equal to or "
            f"larger than page size {size_field} '{page_size}'"
        )
        return [c.invalid(req, message)]
    if size != 0 and memory % size != 0:
        message = (
            f"{req} '{res.requests_memory}' is not a multiple of the page size {size_field} '{page_size}'"
        )
        return [c.invalid(req, message)]
    return []


def guest_memory_limit(field: Path, domain: JSON, res: Resources, config: ClusterConfig) -> list[StatusCause]:
    if config.live_update:
        return []
    memory = obj(domain, "memory")
    if not has(memory, "guest"):
        return []
    guest = parse_or_zero(memory.get("guest"))
    limit = _value(res.limits_memory)
    if limit < guest.value() and limit != 0:
        guest_field = field.child("domain", "memory", "guest")
        _, lim, _, _ = _paths(field)
        message = (
            f"{guest_field} '{guest}' must be equal to or less "
            f"than the memory limit {lim} '{res.limits_memory}'"
        )
        return [c.invalid(guest_field, message)]
    return []


def cpu_requests_and_limits(field: Path, res: Resources) -> list[StatusCause]:
    _, _, req, lim = _paths(field)
    out: list[StatusCause] = []
    if _milli(res.requests_cpu) < 0:
        out.append(c.invalid(req, _MUST_BE_POSITIVE.format(req, res.requests_cpu)))
    if _milli(res.limits_cpu) < 0:
        out.append(c.invalid(lim, _MUST_BE_POSITIVE.format(lim, res.limits_cpu)))
    if _milli(res.limits_cpu) > 0 and _milli(res.requests_cpu) > _milli(res.limits_cpu):
        out.append(c.invalid(req, f"{req} '{res.requests_cpu}' is greater than {lim} '{res.limits_cpu}'"))
    return out


def _is_integer_cpu(quantity: Quantity) -> bool:
    return _value(quantity) * 1000 == _milli(quantity)


def cpu_pinning(field: Path, spec: JSON, res: Resources, config: ClusterConfig) -> list[StatusCause]:
    domain = obj(spec, "domain")
    cpu = obj(domain, "cpu")
    if not flag(cpu, "dedicatedCpuPlacement"):
        return []
    mem_req, mem_lim, cpu_req, cpu_lim = _paths(field)
    dedicated = field.child("domain", "cpu", "dedicatedCpuPlacement")
    cores = field.child("domain", "cpu", "cores")
    out: list[StatusCause] = []
    if _value(res.limits_memory) == 0 and _value(res.requests_memory) == 0:
        out.append(c.invalid(mem_lim, f"{mem_req} or {mem_lim} should be provided"))
    if _value(res.requests_cpu) > 0 and not _is_integer_cpu(res.requests_cpu):
        out.append(c.invalid(cpu_req, "provided resources CPU requests must be an interger"))
    if _value(res.limits_cpu) > 0 and not _is_integer_cpu(res.limits_cpu):
        out.append(c.invalid(cpu_lim, "provided resources CPU limits must be an interger"))
    if (
        _value(res.requests_memory) > 0
        and _value(res.limits_memory) > 0
        and _value(res.requests_memory) != _value(res.limits_memory)
    ):
        out.append(c.invalid(mem_req, f"{mem_req} must be equal to {mem_lim}"))
    requested, limited, count = _value(res.requests_cpu), _value(res.limits_cpu), vcpus(cpu)
    if requested == 0 and limited == 0 and count == 0:
        message = (
            f"either {cpu_req} or {cpu_lim} or {cores} must be provided when DedicatedCPUPlacement is true "
        )
        out.append(c.invalid(dedicated, message))
    if requested > 0 and limited > 0 and requested != limited:
        out.append(
            c.invalid(dedicated, f"{cpu_req} or {cpu_lim} must be equal when DedicatedCPUPlacement is true ")
        )
    if (requested > 0 or limited > 0) and count > 0 and requested != count and limited != count:
        message = (
            f"{cpu_req} or {cpu_lim} must not be provided at the same time with {cores} "
            "when DedicatedCPUPlacement is true "
        )
        out.append(c.invalid(dedicated, message))
    architecture = text(spec, "architecture") or config.default_architecture
    threads = integer(cpu, "threads")
    if threads > 1 and architecture == "arm64":
        threads_field = field.child("domain", "cpu", "threads")
        arch_field = field.child("architecture")
        message = (
            f"threads must not be greater than 1 at {threads_field} "
            f"(got {threads}) when {arch_field} is arm64"
        )
        out.append(c.invalid(arch_field, message))
    if threads > 2:
        threads_field = field.child("domain", "cpu", "threads")
        message = (
            f"Not more than two threads must be provided at {threads_field} (got {threads}) "
            "when DedicatedCPUPlacement is true"
        )
        out.append(c.invalid(dedicated, message))
    return out


def numa(field: Path, domain: JSON, config: ClusterConfig) -> list[StatusCause]:
    cpu = obj(domain, "cpu")
    if not has(obj(cpu, "numa"), "guestMappingPassthrough"):
        return []
    passthrough = field.child("domain", "cpu", "numa", "guestMappingPassthrough")
    out: list[StatusCause] = []
    if not config.enabled("NUMA"):
        out.append(
            c.invalid(
                passthrough,
                f"NUMA feature gate is not enabled in kubevirt-config, invalid entry {passthrough}",
            )
        )
    if not flag(cpu, "dedicatedCpuPlacement"):
        dedicated = field.child("domain", "cpu", "dedicatedCpuPlacement")
        message = f"{dedicated} must be set to true when NUMA topology strategy is set in {passthrough}"
        out.append(c.invalid(passthrough, message))
    if not has(obj(domain, "memory"), "hugepages"):
        hugepages = field.child("domain", "memory", "hugepages")
        message = f"{hugepages} must be requested when NUMA topology strategy is set in {passthrough}"
        out.append(c.invalid(passthrough, message))
    return out


def isolate_emulator_thread(field: Path, domain: JSON) -> list[StatusCause]:
    cpu = obj(domain, "cpu")
    if flag(cpu, "isolateEmulatorThread") and not flag(cpu, "dedicatedCpuPlacement"):
        return [
            c.invalid(
                field.child("domain", "cpu", "isolateEmulatorThread"),
                "IsolateEmulatorThread should be only set in combination with DedicatedCPUPlacement",
            )
        ]
    return []


def cpu_feature_policies(field: Path, domain: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    for i, feature in enumerate(items(obj(domain, "cpu"), "features")):
        policy = text(feature, "policy")
        if policy not in _CPU_FEATURE_POLICIES:
            out.append(
                c.not_supported(
                    field.child("domain", "cpu", "features").index(i).child("policy"),
                    f"CPU feature {text(feature, 'name')} uses policy {policy} that is not supported.",
                )
            )
    return out


def cpu_hotplug(field: Path, domain: JSON) -> list[StatusCause]:
    cpu = obj(domain, "cpu")
    max_sockets = integer(cpu, "maxSockets")
    if max_sockets != 0 and integer(cpu, "sockets") > max_sockets:
        return [
            c.invalid(
                field.child("domain", "cpu", "sockets"),
                "Number of sockets in CPU topology is greater than the maximum sockets allowed",
            )
        ]
    return []


def realtime(field: Path, domain: JSON) -> list[StatusCause]:
    cpu = obj(domain, "cpu")
    if not has(cpu, "realtime"):
        return []
    out: list[StatusCause] = []
    realtime_field = field.child("domain", "cpu", "realtime")
    if not flag(cpu, "dedicatedCpuPlacement"):
        dedicated = field.child("domain", "cpu", "dedicatedCpuPlacement")
        out.append(c.required(dedicated, f"{dedicated} must be set to true when {realtime_field} is used"))
    if not has(obj(cpu, "numa"), "guestMappingPassthrough"):
        passthrough = field.child("domain", "cpu", "numa", "guestMappingPassthrough")
        out.append(c.required(passthrough, f"{passthrough} must be defined when {realtime_field} is used"))
    return out


def mandatory_memory(field: Path, domain: JSON, res: Resources) -> list[StatusCause]:
    """``ValidateVirtualMachineInstanceMandatoryFields``: some memory must be asked for."""
    if _value(res.requests_memory) != 0:
        return []
    memory = opt_obj(domain, "memory")
    if memory is None or (not has(memory, "guest") and not has(memory, "hugepages")):
        guest = field.child("domain", "memory", "guest")
        size = field.child("domain", "memory", "hugepages", "size")
        req = field.child("domain", "resources", "requests", "memory")
        return [
            c.required("", f"no memory requested, at least one of '{guest}', '{size}' or '{req}' must be set")
        ]
    return []
