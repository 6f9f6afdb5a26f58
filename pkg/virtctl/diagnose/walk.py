"""The chain, in the order KubeVirt's operators debug a stuck VM: the VM, the VMI, the launcher pod's
scheduling, its containers, the node, the launcher, and a migration. The walk stops at the first
broken link; a link it could not see is reported and the walk goes on where it can."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from kubevirt.virtctl.diagnose.containers import check_containers
from kubevirt.virtctl.diagnose.findings import Findings
from kubevirt.virtctl.diagnose.launcher import check_launcher
from kubevirt.virtctl.diagnose.migration import check_migration
from kubevirt.virtctl.diagnose.node import check_node
from kubevirt.virtctl.diagnose.reader import ApiReader, Reader
from kubevirt.virtctl.diagnose.scheduling import check_scheduling
from kubevirt.virtctl.diagnose.verdict import Link, Status
from kubevirt.virtctl.diagnose.vm import check_vm
from kubevirt.virtctl.diagnose.vmi import check_vmi

__all__ = ["KINDS", "LINKS", "diagnose"]

KINDS = ("vm", "vmi")
# One function per link; one returning None does not apply to the target (the VM link for a VMI).
LINKS: Sequence[Callable[[Findings], Link | None]] = (
    check_vm,
    check_vmi,
    check_scheduling,
    check_containers,
    check_node,
    check_launcher,
    check_migration,
)


def diagnose(
    api: ApiReader, kind: str, namespace: str, name: str, *, now: datetime | None = None
) -> list[Link]:
    """The links walked for ``kind`` (``vm`` or ``vmi``) ``namespace/name``, the broken one last."""
    if kind not in KINDS:
        raise ValueError(f"kind: must be one of {', '.join(KINDS)}, not {kind!r}")
    findings = Findings(kind, namespace, name, now or datetime.now(UTC), Reader(api))
    walked: list[Link] = []
    for check in LINKS:
        link = check(findings)
        if link is None:
            continue
        walked.append(link)
        if link.status is Status.BROKEN:
            break
    return walked
