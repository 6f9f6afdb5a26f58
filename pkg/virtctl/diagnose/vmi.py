"""The second link: the VirtualMachineInstance exists and is on its way (or why none exists)."""

from __future__ import annotations

from typing import Any

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES
from kubevirt.virtctl.diagnose.findings import Findings, condition_lines, events_or_unseen
from kubevirt.virtctl.diagnose.reader import UnseenError
from kubevirt.virtctl.diagnose.verdict import Link, Status
from kubevirt.virtctl.diagnose.vm import first_request, run_strategy_of
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1 import (
    VirtualMachine,
    VirtualMachineConditionType,
    VirtualMachineInstance,
    VirtualMachineInstanceConditionType,
    VirtualMachineRunStrategy,
)

__all__ = ["IMAGE_PULL_REASONS", "NAME", "check_vmi"]

NAME = "vmi"
FAILED_CREATE = "FailedCreate"
ADMISSION_DENIED = "denied the request: "
# The VMI controller mirrors these container errors as Synchronized=False; the pod links explain them.
IMAGE_PULL_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff"})


def _creation_failure(vm: VirtualMachine, findings: Findings) -> tuple[str, list[str]] | None:
    """Why virt-controller could not create the VMI, from the VM's Failure condition or its events."""
    uid = vm.metadata.uid if vm.metadata is not None else None
    events = events_or_unseen(findings.reader, findings.namespace, "VirtualMachine", findings.name, uid)
    failed_events = [line for line in events if line.startswith(f"{FAILED_CREATE}: ")]
    conditions = vm.status.conditions if vm.status is not None else None
    failure = next(
        (c for c in conditions or () if c.type == VirtualMachineConditionType.FAILURE and c.status == "True"),
        None,
    )
    message = (failure.message or failure.reason or "") if failure is not None else ""
    if not message and failed_events:
        message = failed_events[-1].removeprefix(f"{FAILED_CREATE}: ")
    if not message:
        return None
    if ADMISSION_DENIED in message:
        causes = message.split(ADMISSION_DENIED, 1)[1]
        return f"Admission refused the VMI the VM tried to create: {causes}", events
    return f"virt-controller could not create the VMI: {message}", events


def _why_no_vmi(findings: Findings) -> Link:
    ref = f"{findings.namespace}/{findings.name}"
    vm = findings.vm
    if vm is None:
        seen = findings.unseen.get("vm")
        suffix = f" ({seen})" if seen else ""
        return Link(NAME, Status.BROKEN, f"VirtualMachineInstance {ref} does not exist{suffix}.")
    evidence: dict[str, Any] = {"vmi": "absent", "vmCreated": vm.status.created if vm.status else None}
    failure = _creation_failure(vm, findings)
    if failure is not None:
        message, events = failure
        return Link(NAME, Status.BROKEN, message, {**evidence, "vmEvents": events})
    strategy = run_strategy_of(vm)
    request = first_request(vm)
    if strategy == VirtualMachineRunStrategy.MANUAL and request != "Start":
        message = "No VMI exists: runStrategy Manual creates one only on a start request (virtctl start)."
        return Link(NAME, Status.BROKEN, message, evidence)
    ran = vm.status.run_strategy if vm.status is not None else None
    once_only = (VirtualMachineRunStrategy.ONCE, VirtualMachineRunStrategy.RERUN_ON_FAILURE)
    if strategy in once_only and ran == strategy and request != "Start":
        message = f"No VMI exists: runStrategy {strategy} already ran its VMI and does not start another."
        return Link(NAME, Status.BROKEN, message, evidence)
    generation = vm.metadata.generation if vm.metadata is not None else None
    observed = vm.status.observed_generation if vm.status is not None else None
    evidence.update(generation=generation, observedGeneration=observed)
    message = (
        f"No VMI exists although the VM should run (runStrategy {strategy}): virt-controller has not "
        "created one and recorded no error (is virt-controller running?)."
    )
    return Link(NAME, Status.BROKEN, message, evidence)


def _evidence(vmi: VirtualMachineInstance) -> dict[str, Any]:
    status = vmi.status
    return {
        "phase": vmi.phase or "(unset)",
        "nodeName": status.node_name if status is not None else None,
        "reason": status.reason if status is not None else None,
        "conditions": condition_lines(status.conditions if status is not None else None),
    }


def _condition(vmi: VirtualMachineInstance, type_: str) -> Any:
    return next((c for c in (vmi.status.conditions if vmi.status else None) or () if c.type == type_), None)


def check_vmi(findings: Findings) -> Link:
    ref = f"{findings.namespace}/{findings.name}"
    try:
        raw = findings.reader.get(VIRTUAL_MACHINE_INSTANCES, findings.namespace, findings.name)
    except UnseenError as unseen:
        findings.unseen[NAME] = str(unseen)
        return Link(NAME, Status.UNKNOWN, f"{unseen}; looking for its launcher pod by name.")
    if raw is None:
        return _why_no_vmi(findings)
    try:
        vmi = VirtualMachineInstance.from_dict(raw)
    except ApiParseError as err:
        findings.unseen[NAME] = f"could not read VirtualMachineInstance {ref}: {err}"
        return Link(NAME, Status.UNKNOWN, findings.unseen[NAME])
    findings.vmi = vmi
    evidence = _evidence(vmi)
    phase = evidence["phase"]
    if vmi.is_marked_for_deletion():
        return Link(NAME, Status.BROKEN, f"The VMI is being deleted (phase {phase}).", evidence)
    if vmi.is_final():
        reason = f" (reason {evidence['reason']})" if evidence["reason"] else ""
        return Link(NAME, Status.BROKEN, f"The VMI has ended in phase {phase}{reason}.", evidence)
    synchronized = _condition(vmi, VirtualMachineInstanceConditionType.SYNCHRONIZED)
    if (
        synchronized is not None
        and synchronized.status == "False"
        and synchronized.reason not in IMAGE_PULL_REASONS
    ):
        detail = (
            f"{synchronized.reason}: {synchronized.message}" if synchronized.message else synchronized.reason
        )
        return Link(NAME, Status.BROKEN, f"virt-controller cannot sync the VMI: {detail}.", evidence)
    paused = _condition(vmi, VirtualMachineInstanceConditionType.PAUSED)
    if paused is not None and paused.status == "True":
        message = f"The VMI is paused ({paused.reason or 'Paused'}); virtctl unpause resumes it."
        return Link(NAME, Status.BROKEN, message, evidence)
    ready = _condition(vmi, VirtualMachineInstanceConditionType.READY)
    readiness = "Ready" if ready is not None and ready.status == "True" else "not Ready yet"
    node = f" on node {evidence['nodeName']}" if evidence["nodeName"] else ""
    return Link(NAME, Status.OK, f"phase {phase}{node}, {readiness}.", evidence)
