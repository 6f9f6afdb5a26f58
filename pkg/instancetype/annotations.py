"""The annotations naming the instance type and preference a VMI was built from."""

from __future__ import annotations

from kubevirt.instancetype.matcher import is_cluster_kind
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
    if vm.spec.instancetype is not None:
        kind = vm.spec.instancetype.kind or ""
        name = vm.spec.instancetype.name or ""
        annotations = target.annotations = target.annotations if target.annotations is not None else {}
        if is_cluster_kind(kind, names.CLUSTER_INSTANCETYPE_KIND):
            annotations[CLUSTER_INSTANCETYPE_ANNOTATION] = name
        elif is_cluster_kind(kind, names.INSTANCETYPE_KIND):
            annotations[INSTANCETYPE_ANNOTATION] = name
    if vm.spec.preference is not None:
        kind = vm.spec.preference.kind or ""
        name = vm.spec.preference.name or ""
        annotations = target.annotations = target.annotations if target.annotations is not None else {}
        if is_cluster_kind(kind, names.CLUSTER_PREFERENCE_KIND):
            annotations[CLUSTER_PREFERENCE_ANNOTATION] = name
        elif is_cluster_kind(kind, names.PREFERENCE_KIND):
            annotations[PREFERENCE_ANNOTATION] = name
