"""``kubevirt_vm_resource_requests`` and ``kubevirt_vm_resource_limits`` of one VM, read from its template
(with the instance type applied): memory in bytes and CPU in cores, threads and sockets, each request
labelled with where it comes from (``source``)."""

from __future__ import annotations

from typing import Final

from kubevirt.monitoring.virt_controller.families import GAUGE, Description, Sample
from kubevirt.monitoring.virt_controller.objects import quantity
from kubevirt_api.resource import Quantity
from kubevirt_api.view import View

__all__ = ["LIMITS", "LIMITS_LABELS", "REQUESTS", "REQUESTS_LABELS", "resource_samples"]

REQUESTS: Final = Description(
    "kubevirt_vm_resource_requests",
    GAUGE,
    "Resources requested by Virtual Machine. Reports memory and CPU requests.",
)
LIMITS: Final = Description(
    "kubevirt_vm_resource_limits",
    GAUGE,
    "Resources limits by Virtual Machine. Reports memory and CPU limits.",
)
REQUESTS_LABELS: Final = ("name", "namespace", "resource", "unit", "source")
LIMITS_LABELS: Final = ("name", "namespace", "resource", "unit")

_TOPOLOGY: Final = ("cores", "threads", "sockets")


def _nonzero(resources: View, kind: str, resource: str) -> Quantity | None:
    found = quantity(resources.object(kind).get(resource))
    return found if found is not None and not found.is_zero() else None


def _memory(name: str, namespace: str, domain: View) -> list[Sample]:
    samples: list[Sample] = []
    resources = domain.object("resources")
    requested = _nonzero(resources, "requests", "memory")
    if requested is not None:
        samples.append((REQUESTS, (name, namespace, "memory", "bytes", "domain"), float(requested.value())))
    memory = domain.optional_object("memory")
    if memory is not None:
        guest = quantity(memory.get("guest"))
        if guest is not None and not guest.is_zero():
            samples.append((REQUESTS, (name, namespace, "memory", "bytes", "guest"), float(guest.value())))
        hugepages = memory.optional_object("hugepages")
        # KubeVirt reports the page size itself here, not an amount of memory; an empty one is unreadable.
        page_size = quantity(hugepages.string("pageSize")) if hugepages is not None else None
        if page_size is not None:
            samples.append(
                (REQUESTS, (name, namespace, "memory", "bytes", "hugepages"), float(page_size.value()))
            )
    limit = _nonzero(resources, "limits", "memory")
    if limit is not None:
        samples.append((LIMITS, (name, namespace, "memory", "bytes"), float(limit.value())))
    return samples


def _cpu(name: str, namespace: str, domain: View) -> list[Sample]:
    samples: list[Sample] = []
    resources = domain.object("resources")
    cpu = domain.optional_object("cpu")
    if cpu is not None:
        for unit in _TOPOLOGY:
            count = cpu.integer(unit)
            if count:
                samples.append((REQUESTS, (name, namespace, "cpu", unit, "domain"), float(count)))
    requested = _nonzero(resources, "requests", "cpu")
    if requested is not None:
        cores = requested.milli_value() / 1000
        samples.append((REQUESTS, (name, namespace, "cpu", "cores", "requests"), cores))
    elif cpu is None:
        # Neither set: the VMI gets one socket with one core and one thread.
        samples.extend((REQUESTS, (name, namespace, "cpu", unit, "default"), 1.0) for unit in _TOPOLOGY)
    limit = _nonzero(resources, "limits", "cpu")
    if limit is not None:
        samples.append((LIMITS, (name, namespace, "cpu", "cores"), limit.milli_value() / 1000))
    return samples


def resource_samples(name: str, namespace: str, vm_spec: View) -> list[Sample]:
    """The VM's requests and limits; a VM without a template has none (KubeVirt's code would crash)."""
    template = vm_spec.optional_object("template")
    if template is None:
        return []
    domain = template.object("spec").object("domain")
    return [*_memory(name, namespace, domain), *_cpu(name, namespace, domain)]
