"""The phases of a VirtualMachineInstance and of a migration: plain string constants without the models,
so that virt-launcher, which never loads the typed API, compares phases by these names too."""

from typing import Final

__all__ = [
    "FINAL_MIGRATION_PHASES",
    "FINAL_VMI_PHASES",
    "NOT_RUNNING_MIGRATION_PHASES",
    "VirtualMachineInstanceMigrationPhase",
    "VirtualMachineInstancePhase",
]


class VirtualMachineInstancePhase:
    """Values of the string field typed ``VirtualMachineInstancePhase``."""

    VM_PHASE_UNSET: Final = ""
    PENDING: Final = "Pending"
    SCHEDULING: Final = "Scheduling"
    SCHEDULED: Final = "Scheduled"
    RUNNING: Final = "Running"
    SUCCEEDED: Final = "Succeeded"
    FAILED: Final = "Failed"
    WAITING_FOR_SYNC: Final = "WaitingForSync"
    UNKNOWN: Final = "Unknown"


class VirtualMachineInstanceMigrationPhase:
    """Values of the string field typed ``VirtualMachineInstanceMigrationPhase``."""

    PHASE_UNSET: Final = ""
    PENDING: Final = "Pending"
    SCHEDULING: Final = "Scheduling"
    SCHEDULED: Final = "Scheduled"
    PREPARING_TARGET: Final = "PreparingTarget"
    TARGET_READY: Final = "TargetReady"
    RUNNING: Final = "Running"
    SUCCEEDED: Final = "Succeeded"
    FAILED: Final = "Failed"
    WAITING_FOR_SYNC: Final = "WaitingForSync"
    SYNCHRONIZING: Final = "Synchronizing"


# The phases a VMI and a migration never leave (the Go types' IsFinal).
FINAL_VMI_PHASES: Final = frozenset(
    {VirtualMachineInstancePhase.SUCCEEDED, VirtualMachineInstancePhase.FAILED}
)
FINAL_MIGRATION_PHASES: Final = frozenset(
    {VirtualMachineInstanceMigrationPhase.SUCCEEDED, VirtualMachineInstanceMigrationPhase.FAILED}
)
# The phases of a migration that is not (or no longer) moving a guest (the Go type's IsRunning is false).
NOT_RUNNING_MIGRATION_PHASES: Final = frozenset(
    {
        VirtualMachineInstanceMigrationPhase.PHASE_UNSET,
        VirtualMachineInstanceMigrationPhase.PENDING,
        VirtualMachineInstanceMigrationPhase.WAITING_FOR_SYNC,
        VirtualMachineInstanceMigrationPhase.SYNCHRONIZING,
        *FINAL_MIGRATION_PHASES,
    }
)
