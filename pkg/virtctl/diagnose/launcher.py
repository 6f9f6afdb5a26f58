"""The sixth link: the launcher's command socket, the libvirt domain and its last event.

These live on the node and are read through virt-handler's server (behind a virt-api subresource),
which has no read-only endpoint for them in this version: the link says so instead of guessing, and
never execs into the pod. When that endpoint exists, this module is the one to change.
"""

from __future__ import annotations

from kubevirt.virtctl.diagnose.findings import Findings
from kubevirt.virtctl.diagnose.verdict import Link, Status

__all__ = ["NAME", "check_launcher"]

NAME = "launcher"


def check_launcher(findings: Findings) -> Link:
    node = findings.node_name
    where = f" on node {node}" if node else ""
    message = (
        f"The launcher's socket, domain state and last domain event{where} are not reachable from the API "
        "in this version."
    )
    return Link(NAME, Status.UNKNOWN, message)
