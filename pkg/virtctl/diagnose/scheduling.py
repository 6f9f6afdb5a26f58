"""The third link: virt-controller made the VMI a launcher pod, and the scheduler put it on a node."""

from __future__ import annotations

from kubevirt.virtctl.diagnose.findings import Findings, events_or_unseen
from kubevirt.virtctl.diagnose.pods import launcher_pod, name_of, unscheduled
from kubevirt.virtctl.diagnose.reader import UnseenError
from kubevirt.virtctl.diagnose.verdict import Link, Status

__all__ = ["NAME", "check_scheduling"]

NAME = "scheduling"
FAILED_CREATE = "FailedCreate: "


def check_scheduling(findings: Findings) -> Link:
    try:
        pod = launcher_pod(findings)
    except UnseenError as unseen:
        findings.unseen["pod"] = str(unseen)
        return Link(NAME, Status.UNKNOWN, f"{unseen}; the launcher pod's state is not known.")
    vmi = findings.vmi
    if pod is None:
        if vmi is None:
            return Link(NAME, Status.BROKEN, "No launcher pod exists for the VMI.")
        if vmi.is_unprocessed():
            events = events_or_unseen(
                findings.reader, findings.namespace, "VirtualMachineInstance", findings.name, findings.vmi_uid
            )
            failed = [line.removeprefix(FAILED_CREATE) for line in events if line.startswith(FAILED_CREATE)]
            if failed:
                message = f"virt-controller could not create the launcher pod: {failed[-1]}"
            else:
                message = (
                    "virt-controller has not created a launcher pod for the VMI "
                    "(is virt-controller running?)."
                )
            return Link(NAME, Status.BROKEN, message, {"vmiEvents": events})
        return Link(NAME, Status.BROKEN, f"The VMI is in phase {vmi.phase} but its launcher pod is gone.")
    findings.pod = pod
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return Link(
            NAME,
            Status.OK,
            f"launcher pod {name_of(pod)} is scheduled on node {node}.",
            {"pod": name_of(pod), "node": node},
        )
    message, evidence = unscheduled(findings, pod, role="launcher pod")
    return Link(NAME, Status.BROKEN, message, evidence)
