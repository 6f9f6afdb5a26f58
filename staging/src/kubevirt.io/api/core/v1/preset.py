"""VirtualMachineInstancePreset (deprecated): a ``spec.domain`` applied to the VMIs its selector matches."""

from __future__ import annotations

from kubevirt_api.base import ApiModel, TypeMeta
from kubevirt_api.core.v1.domain import DomainSpec
from kubevirt_api.k8s import meta_v1

__all__ = [
    "VirtualMachineInstancePreset",
    "VirtualMachineInstancePresetList",
    "VirtualMachineInstancePresetSpec",
]


class VirtualMachineInstancePresetSpec(ApiModel):
    selector: meta_v1.LabelSelector
    domain: DomainSpec | None = None


class VirtualMachineInstancePreset(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineInstancePresetSpec | None = None


class VirtualMachineInstancePresetList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineInstancePreset]
