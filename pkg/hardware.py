"""Counts KubeVirt derives from a VMI's hardware spec (its ``pkg/util/hardware``), for the components
that read the VMI as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def number_of_vcpus(cpu: Mapping[str, Any] | None) -> int:
    """KubeVirt's ``GetNumberOfVCPUs``: the product of the CPU topology's parts that are set (0 when
    none is)."""
    count = 0
    for key in ("cores", "sockets", "threads"):
        part = int((cpu or {}).get(key) or 0)
        if part:
            count = part if count == 0 else count * part
    return count
