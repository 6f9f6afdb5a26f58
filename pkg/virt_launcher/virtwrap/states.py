"""libvirt domain states and reasons as KubeVirt names them in the domain JSON (``status.status/reason``)."""

from __future__ import annotations

import libvirt

NO_STATE = "NoState"
RUNNING = "Running"
BLOCKED = "Blocked"
PAUSED = "Paused"
SHUTTING_DOWN = "ShuttingDown"
SHUTOFF = "Shutoff"
CRASHED = "Crashed"
PM_SUSPENDED = "PMSuspended"

REASON_UNKNOWN = "Unknown"
REASON_NON_EXISTENT = "NonExistent"

_STATES = {
    libvirt.VIR_DOMAIN_NOSTATE: NO_STATE,
    libvirt.VIR_DOMAIN_RUNNING: RUNNING,
    libvirt.VIR_DOMAIN_BLOCKED: BLOCKED,
    libvirt.VIR_DOMAIN_PAUSED: PAUSED,
    libvirt.VIR_DOMAIN_SHUTDOWN: SHUTTING_DOWN,
    libvirt.VIR_DOMAIN_SHUTOFF: SHUTOFF,
    libvirt.VIR_DOMAIN_CRASHED: CRASHED,
    libvirt.VIR_DOMAIN_PMSUSPENDED: PM_SUSPENDED,
}

# KubeVirt translates reasons only for these states (every other state reports "Unknown"); a reason
# missing from a state's table is Go's zero value, the empty string.
_REASONS: dict[int, dict[int, str]] = {
    libvirt.VIR_DOMAIN_PAUSED: {
        libvirt.VIR_DOMAIN_PAUSED_UNKNOWN: REASON_UNKNOWN,
        libvirt.VIR_DOMAIN_PAUSED_USER: "User",
        libvirt.VIR_DOMAIN_PAUSED_MIGRATION: "Migration",
        libvirt.VIR_DOMAIN_PAUSED_SAVE: "Save",
        libvirt.VIR_DOMAIN_PAUSED_DUMP: "Dump",
        libvirt.VIR_DOMAIN_PAUSED_IOERROR: "IOError",
        libvirt.VIR_DOMAIN_PAUSED_WATCHDOG: "Watchdog",
        libvirt.VIR_DOMAIN_PAUSED_FROM_SNAPSHOT: "FromSnapshot",
        libvirt.VIR_DOMAIN_PAUSED_SHUTTING_DOWN: "ShuttingDown",
        libvirt.VIR_DOMAIN_PAUSED_SNAPSHOT: "Snapshot",
        libvirt.VIR_DOMAIN_PAUSED_CRASHED: "Crashed",
        libvirt.VIR_DOMAIN_PAUSED_STARTING_UP: "StartingUp",
        libvirt.VIR_DOMAIN_PAUSED_POSTCOPY: "Postcopy",
        libvirt.VIR_DOMAIN_PAUSED_POSTCOPY_FAILED: "PostcopyFailed",
    },
    libvirt.VIR_DOMAIN_SHUTDOWN: {
        libvirt.VIR_DOMAIN_SHUTDOWN_UNKNOWN: REASON_UNKNOWN,
        libvirt.VIR_DOMAIN_SHUTDOWN_USER: "User",
    },
    libvirt.VIR_DOMAIN_SHUTOFF: {
        libvirt.VIR_DOMAIN_SHUTOFF_UNKNOWN: REASON_UNKNOWN,
        libvirt.VIR_DOMAIN_SHUTOFF_SHUTDOWN: "Shutdown",
        libvirt.VIR_DOMAIN_SHUTOFF_DESTROYED: "Destroyed",
        libvirt.VIR_DOMAIN_SHUTOFF_CRASHED: "Crashed",
        libvirt.VIR_DOMAIN_SHUTOFF_MIGRATED: "Migrated",
        libvirt.VIR_DOMAIN_SHUTOFF_SAVED: "Saved",
        libvirt.VIR_DOMAIN_SHUTOFF_FAILED: "Failed",
        libvirt.VIR_DOMAIN_SHUTOFF_FROM_SNAPSHOT: "FromSnapshot",
    },
    libvirt.VIR_DOMAIN_CRASHED: {
        libvirt.VIR_DOMAIN_CRASHED_UNKNOWN: REASON_UNKNOWN,
        libvirt.VIR_DOMAIN_CRASHED_PANICKED: "Panicked",
    },
}

# Paused for one of libvirt's own jobs: never resumed by a sync.
JOB_PAUSE_REASONS = frozenset(
    {
        libvirt.VIR_DOMAIN_PAUSED_MIGRATION,
        libvirt.VIR_DOMAIN_PAUSED_SAVE,
        libvirt.VIR_DOMAIN_PAUSED_DUMP,
        libvirt.VIR_DOMAIN_PAUSED_SNAPSHOT,
        libvirt.VIR_DOMAIN_PAUSED_STARTING_UP,
        libvirt.VIR_DOMAIN_PAUSED_POSTCOPY,
        libvirt.VIR_DOMAIN_PAUSED_POSTCOPY_FAILED,
        libvirt.VIR_DOMAIN_PAUSED_SHUTTING_DOWN,
    }
)


def state_name(state: int) -> str:
    return _STATES.get(state, NO_STATE)


def reason_name(state: int, reason: int) -> str:
    table = _REASONS.get(state)
    if table is None:
        return REASON_UNKNOWN
    return table.get(reason, "")


def is_down(state: int) -> bool:
    """libvirt reports no running guest for the domain."""
    return state in (libvirt.VIR_DOMAIN_SHUTOFF, libvirt.VIR_DOMAIN_CRASHED, libvirt.VIR_DOMAIN_NOSTATE)
