"""Graceful shutdown of a domain: ACPI first, re-sent every few seconds, then a kill (KubeVirt's rules).

The grace period is the VMI's ``terminationGracePeriodSeconds`` when set, else the one the launcher
stored in the domain's metadata; it runs from the first shutdown signal, which the launcher records
in the domain metadata (``deletionTimestamp``). A domain without a grace period in its metadata, or a
grace period of 0, is killed at once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from kubevirt.timestamps import parse_timestamp
from kubevirt_api.view import JSON

RESEND_SECONDS = 5
# The domain state while the guest is acting on the ACPI request.
SHUTTING_DOWN = "ShuttingDown"


class Action(enum.Enum):
    SHUTDOWN = "ShutdownVirtualMachine"
    KILL = "KillVirtualMachine"
    WAIT = "wait"


@dataclass(frozen=True)
class Step:
    action: Action
    requeue_seconds: float | None = None


def grace_metadata(domain: JSON | None) -> JSON:
    spec = (domain or {}).get("Spec") or {}
    return ((spec.get("Metadata") or {}).get("KubeVirt") or {}).get("GracePeriod") or {}


def marked_for_graceful_shutdown(domain: JSON | None) -> bool:
    """Whether the launcher was told to stop (its pod got SIGTERM) and asks virt-handler to shut down."""
    return grace_metadata(domain).get("MarkedForGracefulShutdown") is True


def next_step(vmi_grace: int | None, domain: JSON, now: datetime) -> Step:
    """What to do next for a live ``domain`` that has to stop."""
    metadata = grace_metadata(domain)
    stored = metadata.get("DeletionGracePeriodSeconds")
    # The launcher writes an integer; anything else (a launcher is not trusted) counts as none.
    if not isinstance(stored, int) or isinstance(stored, bool) or stored == 0:
        return Step(Action.KILL)
    grace = vmi_grace if vmi_grace is not None else stored
    if grace <= 0:
        return Step(Action.KILL)
    started = parse_timestamp(metadata.get("DeletionTimestamp"))
    if started is None:
        # First signal; come back soon in case the guest missed it (it may still be booting).
        return Step(Action.SHUTDOWN, float(min(RESEND_SECONDS, grace)))
    elapsed = int((now - started).total_seconds())
    if elapsed >= grace:
        return Step(Action.KILL)
    left = float(min(RESEND_SECONDS, max(1, grace - elapsed)))
    status = ((domain.get("Status") or {}).get("Status")) or ""
    return Step(Action.WAIT if status == SHUTTING_DOWN else Action.SHUTDOWN, left)
