"""MigrationPolicy matching: which policy, if any, tunes a VMI's migration, and the configuration it gives.

A policy matches when every label of its ``virtualMachineInstanceSelector`` is on the VMI and every label
of its ``namespaceSelector`` is on the VMI's namespace. Among matching policies the one naming the most
matching labels wins (VMI labels break a tie in the total), then the lexicographically first name.
As in KubeVirt, a VMI without any labels skips both selectors (so such a VMI matches every policy that
has selectors at all). The winner's set fields override the cluster's ``migrations`` configuration;
``allowWorkloadDisruption`` follows ``allowPostCopy`` when the policy leaves it unset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubevirt_api.view import JSON

# Policy spec field -> migrationConfiguration field (the same names).
_OVERRIDES: Final = (
    "allowAutoConverge",
    "bandwidthPerMigration",
    "completionTimeoutPerGiB",
    "allowPostCopy",
    "allowWorkloadDisruption",
)


@dataclass(frozen=True, order=True)
class _Score:
    total: int
    vmi_labels: int


def _score(
    policy: Mapping[str, Any], vmi_labels: Mapping[str, str] | None, namespace_labels: Mapping[str, str]
) -> _Score | None:
    """How many labels ``policy`` matches, or None when it does not match."""
    selectors = (policy.get("spec") or {}).get("selectors")
    if selectors is None:
        return None

    def count(wanted: Mapping[str, str] | None, labels: Mapping[str, str]) -> int | None:
        matched = 0
        for key, value in (wanted or {}).items():
            if labels.get(key) != value:
                return None
            matched += 1
        return matched

    on_vmi = on_namespace = 0
    if vmi_labels is not None:
        found = count(selectors.get("virtualMachineInstanceSelector"), vmi_labels)
        if found is None:
            return None
        on_vmi = found
        found = count(selectors.get("namespaceSelector"), namespace_labels)
        if found is None:
            return None
        on_namespace = found
    return _Score(on_vmi + on_namespace, on_vmi)


def match_policy(
    policies: Iterable[Mapping[str, Any]],
    vmi_labels: Mapping[str, str] | None,
    namespace_labels: Mapping[str, str] | None,
) -> Mapping[str, Any] | None:
    """The policy that tunes a VMI with ``vmi_labels`` in a namespace with ``namespace_labels``."""
    best: tuple[_Score, str, Mapping[str, Any]] | None = None
    for policy in policies:
        score = _score(policy, vmi_labels, namespace_labels or {})
        if score is None:
            continue
        name = str(policy["metadata"].get("name") or "")
        # Higher score first, then the lexicographically smaller name.
        if best is None or score > best[0] or (score == best[0] and name < best[1]):
            best = (score, name, policy)
    return best[2] if best is not None else None


def configuration_by_policy(policy: Mapping[str, Any], cluster: Mapping[str, Any]) -> JSON | None:
    """The cluster's migrationConfiguration with the policy's fields laid over it; None if it sets none."""
    spec = policy.get("spec") or {}
    merged = dict(cluster)
    changed = False
    for field in _OVERRIDES:
        if spec.get(field) is not None:
            merged[field] = spec[field]
            changed = True
    if spec.get("allowWorkloadDisruption") is None and spec.get("allowPostCopy") is not None:
        merged["allowWorkloadDisruption"] = spec["allowPostCopy"]
    if "bandwidthPerMigration" in spec and spec["bandwidthPerMigration"] is not None:
        merged["bandwidthPerMigration"] = str(spec["bandwidthPerMigration"])
    return merged if changed else None
