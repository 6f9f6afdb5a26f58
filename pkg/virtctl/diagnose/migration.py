"""The last link: the VMI's newest migration, its target pod, the target node's virt-handler, and the
VMI's ``migrationState``."""

from __future__ import annotations

from typing import Any

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCE_MIGRATIONS
from kubevirt.virtctl.diagnose.containers import container_trouble
from kubevirt.virtctl.diagnose.findings import Findings, condition_lines
from kubevirt.virtctl.diagnose.node import node_health
from kubevirt.virtctl.diagnose.pods import name_of, newest, unscheduled
from kubevirt.virtctl.diagnose.reader import UnseenError
from kubevirt.virtctl.diagnose.verdict import Link, Status
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1 import VirtualMachineInstanceMigration, VirtualMachineInstanceMigrationPhase
from kubevirt_api.core.v1.constants import MIGRATION_JOB_LABEL

__all__ = ["NAME", "check_migration"]

NAME = "migration"


def _migration_state(findings: Findings, migration: VirtualMachineInstanceMigration) -> dict[str, Any] | None:
    """The VMI's migrationState when it belongs to this migration, else the copy the VMIM kept."""
    uid = migration.metadata.uid if migration.metadata is not None else None
    vmi_state = (
        findings.vmi.status.migration_state if findings.vmi is not None and findings.vmi.status else None
    )
    if vmi_state is not None and vmi_state.migration_uid == uid:
        return vmi_state.to_dict()
    kept = migration.status.migration_state if migration.status is not None else None
    return kept.to_dict() if kept is not None else None


def _target(findings: Findings, uid: str | None, evidence: dict[str, Any], source: str | None) -> Link | None:
    """The broken link in the target pod or the target node, if any."""
    try:
        # The target's hotplug attachment pod carries the job label too: only the launcher is the target.
        selector = f"{MIGRATION_JOB_LABEL}={uid},kubevirt.io=virt-launcher"
        pods = findings.reader.list(PODS, findings.namespace, label_selector=selector)
    except UnseenError as unseen:
        evidence["targetPod"] = str(unseen)
        return None
    pod = newest(pods)
    if pod is None:
        evidence["targetPod"] = None
        return None
    evidence["targetPod"] = name_of(pod)
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        message, more = unscheduled(
            findings, pod, role="migration target pod", excluded=(source,) if source else ()
        )
        return Link(NAME, Status.BROKEN, message, {**evidence, "targetPodScheduling": more})
    evidence["targetNode"] = node
    trouble = container_trouble(pod)
    if trouble is not None:
        return Link(NAME, Status.BROKEN, f"{trouble} (migration target pod {name_of(pod)}).", evidence)
    status, message, health = node_health(findings, node)
    evidence["targetNodeHealth"] = health
    if status is Status.BROKEN:
        return Link(NAME, Status.BROKEN, f"Migration target: {message}", evidence)
    return None


def check_migration(findings: Findings) -> Link:
    try:
        migrations = findings.reader.list(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, findings.namespace)
    except UnseenError as unseen:
        return Link(NAME, Status.UNKNOWN, f"{unseen}.")
    mine = [m for m in migrations if (m.get("spec") or {}).get("vmiName") == findings.name]
    raw = newest(mine)
    if raw is None:
        return Link(NAME, Status.SKIPPED, "No migration of this VMI.")
    try:
        migration = VirtualMachineInstanceMigration.from_dict(raw)
    except ApiParseError as err:
        return Link(NAME, Status.UNKNOWN, f"could not read migration {name_of(raw)}: {err}.")
    name = name_of(raw)
    phase = migration.phase or "(unset)"
    state = _migration_state(findings, migration)
    evidence: dict[str, Any] = {
        "migration": name,
        "phase": phase,
        "conditions": condition_lines(migration.status.conditions if migration.status else None),
        "migrationState": state,
    }
    source = (state or {}).get("sourceNode") or findings.node_name
    evidence["sourceNode"] = source
    if phase == VirtualMachineInstanceMigrationPhase.FAILED:
        reason = (state or {}).get("failureReason") or "no failure reason recorded"
        return Link(NAME, Status.BROKEN, f"Migration {name} failed: {reason}.", evidence)
    if phase == VirtualMachineInstanceMigrationPhase.SUCCEEDED:
        target = (state or {}).get("targetNode")
        onto = f" onto node {target}" if target else ""
        return Link(NAME, Status.OK, f"Migration {name} succeeded{onto}.", evidence)
    uid = migration.metadata.uid if migration.metadata is not None else None
    broken = _target(findings, uid, evidence, source)
    if broken is not None:
        return broken
    target = evidence.get("targetPod")
    on = (
        f", target pod {target}"
        if isinstance(target, str) and target and not target.startswith("could not")
        else ""
    )
    return Link(NAME, Status.OK, f"Migration {name} is in phase {phase}{on}.", evidence)
