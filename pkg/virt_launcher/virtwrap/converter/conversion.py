"""The state one conversion shares between configurators: inputs, the domain being built, derived facts."""

from __future__ import annotations

from collections.abc import Callable

from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.resource import Quantity

from .. import api
from .context import ConverterContext
from .errors import ConversionError

# KubeVirt's converter allocates whatever topology it is given (a negative CPU request becomes 2^32-1
# sockets); far beyond anything QEMU accepts, such topologies are refused instead of built.
MAX_VCPUS = 100_000
VIRTIO_NON_TRANSITIONAL = "virtio-non-transitional"
VIRTIO_TRANSITIONAL = "virtio-transitional"
_UINT32 = 0xFFFFFFFF


class Conversion:
    """One VMI being turned into one domain. Configurators read the inputs and fill ``domain``."""

    __slots__ = (
        "context",
        "cores",
        "domain",
        "namespace",
        "requested_vcpus",
        "sockets",
        "threads",
        "uid",
        "virtio_model",
        "vmi",
        "vmi_name",
    )

    def __init__(self, vmi: VirtualMachineInstance, context: ConverterContext) -> None:
        self.vmi = vmi
        self.context = context
        meta = vmi.metadata
        self.vmi_name = (meta.name if meta else None) or ""
        self.namespace = (meta.namespace if meta else None) or ""
        self.uid = (meta.uid if meta else None) or ""
        self.domain = api.Domain(type=context.domain_type, name=f"{self.namespace}_{self.vmi_name}")
        transitional = context.use_virtio_transitional
        if transitional is None:
            transitional = bool(vmi.spec.domain.devices.use_virtio_transitional)
        self.virtio_model = VIRTIO_TRANSITIONAL if transitional else VIRTIO_NON_TRANSITIONAL
        self.sockets, self.cores, self.threads = guest_cpu_topology(vmi)
        self.requested_vcpus = self.sockets * self.cores * self.threads

    @property
    def is_root(self) -> bool:
        """KubeVirt's test: a VMI runs as root unless its status names another user."""
        status = self.vmi.status
        return status is None or not status.runtime_user


Configurator = Callable[[Conversion], None]


def guest_cpu_topology(vmi: VirtualMachineInstance) -> tuple[int, int, int]:
    """(sockets, cores, threads) as the guest boots; unset parts count as 1.

    Without any topology (the defaults normally set one) the CPU limit, else the request, becomes the
    socket count, as KubeVirt does.
    """
    cpu = vmi.spec.domain.cpu
    sockets = (cpu.sockets if cpu else None) or 0
    cores = (cpu.cores if cpu else None) or 0
    threads = (cpu.threads if cpu else None) or 0
    if sockets == 0 and cores == 0 and threads == 0:
        cpu_quantity = resource_quantity(vmi, "limits", "cpu") or resource_quantity(vmi, "requests", "cpu")
        if cpu_quantity is not None:
            sockets = cpu_quantity.value() & _UINT32
    return sockets or 1, cores or 1, threads or 1


def resource_quantity(vmi: VirtualMachineInstance, kind: str, name: str) -> Quantity | None:
    resources = vmi.spec.domain.resources
    if resources is None:
        return None
    values = resources.requests if kind == "requests" else resources.limits
    return values.get(name) if values else None


_bytes_by_text: dict[str, int] = {}


def quantity_to_bytes(quantity: Quantity, field: str) -> int:
    """KubeVirt's ``QuantityToByte``: exact integers as they are, fractions as ``Value()-1``."""
    text = str(quantity)
    size = _bytes_by_text.get(text)
    if size is None:
        fraction = quantity.as_fraction()
        size = fraction.numerator if fraction.denominator == 1 else quantity.value() - 1
        if len(_bytes_by_text) < 4096:  # the same few sizes come back on every sync
            _bytes_by_text[text] = size
    if size < 0:
        raise ConversionError(field, f"Memory size '{quantity}' must be greater than or equal to 0")
    return size


def join_base(directory: str, path: str) -> str:
    """``directory`` joined with the last element of ``path`` as Go's ``filepath.Join(dir,
    filepath.Base(path))`` gives it: trailing slashes do not count, a path of slashes adds nothing, and
    the result is cleaned (a last element ``..`` leaves the directory's parent)."""
    trimmed = path.rstrip("/")
    base = trimmed.rpartition("/")[2] if trimmed else ("/" if path else ".")
    return _go_clean(f"{directory}/{base}" if directory else base)


def _go_clean(path: str) -> str:
    """Go's ``path.Clean``: no empty or ``.`` elements, each ``..`` takes away the element before it
    (and at the root, nothing), no trailing slash; ``.`` for an empty result."""
    rooted = path.startswith("/")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not rooted:
                parts.append(part)
            continue
        parts.append(part)
    cleaned = "/".join(parts)
    return f"/{cleaned}" if rooted else cleaned or "."
