"""The annotations naming the instance type and preference a VMI was built from."""

from __future__ import annotations

from kubevirt.instancetype.matcher import spells_kind
from kubevirt_api.core.v1.constants import (
    CLUSTER_INSTANCETYPE_ANNOTATION,
    CLUSTER_PREFERENCE_ANNOTATION,
    INSTANCETYPE_ANNOTATION,
    PREFERENCE_ANNOTATION,
)
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.instancetype import constants as names
from kubevirt_api.k8s import meta_v1

__all__ = ["set_name_annotations"]


def set_name_annotations(vm: VirtualMachine, target: meta_v1.ObjectMeta) -> None:
    """``kubevirt.io/[cluster-]instancetype-name`` and ``…preference-name``; unknown kinds get none."""
    selections = (
        (vm.spec.instancetype, names.CLUSTER_INSTANCETYPE_KIND, CLUSTER_INSTANCETYPE_ANNOTATION),
        (vm.spec.instancetype, names.INSTANCETYPE_KIND, INSTANCETYPE_ANNOTATION),
        (vm.spec.preference, names.CLUSTER_PREFERENCE_KIND, CLUSTER_PREFERENCE_ANNOTATION),
        (vm.spec.preference, names.PREFERENCE_KIND, PREFERENCE_ANNOTATION),
    )
    for matcher, kind, annotation in selections:
        if matcher is None:
            continue
        annotations = target.annotations = target.annotations if target.annotations is not None else {}
        if spells_kind(matcher.kind or "", kind):
            annotations[annotation] = matcher.name or ""
