"""``spec.workloads.nodePlacement``: where virt-handler's pods may run (KubeVirt's
``InjectPlacementMetadata`` with its any-node default).

The placement's nodeSelector, affinity and tolerations are merged into the pod template: a selector key
the template already sets wins, ``kubernetes.io/os=linux`` is added unless the placement says otherwise,
affinity terms and tolerations are appended.
"""

from __future__ import annotations

import copy

from kubevirt_api.core.v1.kubevirt import NodePlacement
from kubevirt_api.view import JSON

__all__ = ["OS_LABEL", "inject_placement", "placement_json"]

OS_LABEL = "kubernetes.io/os"
OS_LINUX = "linux"
_AFFINITY_KINDS = ("nodeAffinity", "podAffinity", "podAntiAffinity")


def placement_json(placement: NodePlacement | None) -> JSON:
    """The placement as the API writes it ({} when there is none)."""
    if placement is None:
        return {}
    dumped: JSON = placement.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


def _merge_node_affinity(current: JSON, extra: JSON) -> None:
    required = extra.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required:
        terms = current.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
        terms.setdefault("nodeSelectorTerms", []).extend(copy.deepcopy(required.get("nodeSelectorTerms", [])))
    preferred = extra.get("preferredDuringSchedulingIgnoredDuringExecution")
    if preferred:
        current.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).extend(
            copy.deepcopy(preferred)
        )


def _merge_pod_affinity(current: JSON, extra: JSON) -> None:
    for key in (
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    ):
        if extra.get(key):
            current.setdefault(key, []).extend(copy.deepcopy(extra[key]))


def _merge_affinity(pod_spec: JSON, affinity: JSON) -> None:
    for kind in _AFFINITY_KINDS:
        extra = affinity.get(kind)
        if not extra:
            continue
        current = pod_spec.setdefault("affinity", {})
        if kind not in current:
            current[kind] = copy.deepcopy(extra)
        elif kind == "nodeAffinity":
            _merge_node_affinity(current[kind], extra)
        else:
            _merge_pod_affinity(current[kind], extra)


def inject_placement(placement: JSON, pod_spec: JSON) -> None:
    """Merges ``placement`` (a nodePlacement as JSON, maybe empty) into ``pod_spec`` in place."""
    wanted = {**(placement.get("nodeSelector") or {})}
    wanted.setdefault(OS_LABEL, OS_LINUX)
    selector = pod_spec.setdefault("nodeSelector", {})
    for key, value in wanted.items():
        selector.setdefault(key, value)  # what the template set on purpose is kept
    if placement.get("affinity"):
        _merge_affinity(pod_spec, placement["affinity"])
    if placement.get("tolerations"):
        pod_spec.setdefault("tolerations", []).extend(copy.deepcopy(placement["tolerations"]))
