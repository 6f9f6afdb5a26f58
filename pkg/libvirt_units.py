"""libvirt's memory units (``<memory unit=...>``, ``<currentMemory>``): the size of each in bytes.

libvirt reads a unit without regard to case and takes KiB when none is given; virt-launcher reads the
domain it defines, virt-handler the domain a launcher reports, both with this one table.
"""

from typing import Final

_BYTES: Final = {
    "b": 1,
    "bytes": 1,
    "kb": 1000,
    "k": 1024,
    "kib": 1024,
    "mb": 1000**2,
    "m": 1024**2,
    "mib": 1024**2,
    "gb": 1000**3,
    "g": 1024**3,
    "gib": 1024**3,
    "tb": 1000**4,
    "t": 1024**4,
    "tib": 1024**4,
}


def unit_bytes(unit: str | None) -> int | None:
    """The bytes of one libvirt memory ``unit`` (KiB when None or empty); None for a unit libvirt lacks."""
    return _BYTES.get((unit or "KiB").lower())
