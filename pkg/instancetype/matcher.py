"""Which object a VM's ``spec.instancetype`` / ``spec.preference`` matcher names.

KubeVirt accepts the kind in any letter case, singular or plural, and reads an empty kind as the
cluster-wide one.
"""

from __future__ import annotations

from typing import Final

from kubevirt_api.instancetype import constants as names

__all__ = [
    "DEFAULT_INSTANCETYPE_KIND",
    "DEFAULT_PREFERENCE_KIND",
    "UnexpectedKindError",
    "instancetype_kind",
    "not_found_message",
    "preference_kind",
    "spells_kind",
]

# What the VM mutating webhook writes into an empty matcher kind.
DEFAULT_INSTANCETYPE_KIND: Final = "virtualmachineclusterinstancetype"
DEFAULT_PREFERENCE_KIND: Final = "virtualmachineclusterpreference"

_PLURALS: Final = {
    names.INSTANCETYPE_KIND: names.INSTANCETYPE_PLURAL,
    names.CLUSTER_INSTANCETYPE_KIND: names.CLUSTER_INSTANCETYPE_PLURAL,
    names.PREFERENCE_KIND: names.PREFERENCE_PLURAL,
    names.CLUSTER_PREFERENCE_KIND: names.CLUSTER_PREFERENCE_PLURAL,
}


class UnexpectedKindError(ValueError):
    """The matcher names a kind that is neither the namespaced nor the cluster-wide one."""


def spells_kind(matcher_kind: str, kind: str) -> bool:
    """Whether ``matcher_kind`` spells ``kind``; an empty one spells the cluster-wide kinds."""
    spelled = matcher_kind.lower()
    if not spelled:
        return kind in (names.CLUSTER_INSTANCETYPE_KIND, names.CLUSTER_PREFERENCE_KIND)
    return spelled in (kind.lower(), _PLURALS[kind])


def _resolve(matcher_kind: str | None, namespaced: str, cluster: str, matcher: str) -> str:
    spelled = matcher_kind or ""
    for kind in (namespaced, cluster):
        if spells_kind(spelled, kind):
            return kind
    raise UnexpectedKindError(f"got unexpected kind in {matcher}: {spelled}")


def instancetype_kind(matcher_kind: str | None) -> str:
    """``VirtualMachineInstancetype`` or ``VirtualMachineClusterInstancetype``."""
    return _resolve(
        matcher_kind, names.INSTANCETYPE_KIND, names.CLUSTER_INSTANCETYPE_KIND, "InstancetypeMatcher"
    )


def preference_kind(matcher_kind: str | None) -> str:
    """``VirtualMachinePreference`` or ``VirtualMachineClusterPreference``."""
    return _resolve(matcher_kind, names.PREFERENCE_KIND, names.CLUSTER_PREFERENCE_KIND, "PreferenceMatcher")


def not_found_message(kind: str, name: str) -> str:
    """The API server's NotFound message for one of the four kinds."""
    return f'{_PLURALS[kind]}.{names.INSTANCETYPE_GROUP_NAME} "{name}" not found'
