"""Every family virt-controller exposes from this package, for the generated metrics table."""

from __future__ import annotations

from kubevirt.monitoring.virt_controller import (
    component,
    migration_transitions,
    migrationstats,
    perfscale,
    vmi_overhead,
    vmistats,
    vmsnapshot,
    vmstats,
)
from kubevirt.monitoring.virt_controller.families import Description

__all__ = ["metric_descriptions"]


def metric_descriptions() -> list[Description]:
    """(name, type, help) of each family, sorted by name; types are KubeVirt's documented ones."""
    modules = (
        component,
        migration_transitions,
        migrationstats,
        perfscale,
        vmi_overhead,
        vmistats,
        vmsnapshot,
        vmstats,
    )
    return sorted((d for module in modules for d in module.metric_descriptions()), key=lambda d: d.name)
