"""VirtualMachineClone (``clone.kubevirt.io``; v1beta1 stored, v1alpha1 served with the same schema)."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Condition, Time, TypeMeta
from kubevirt_api.k8s import core_v1, meta_v1

__all__ = [
    "CLONE_GROUP_NAME",
    "CLONE_VERSIONS",
    "CloneCondition",
    "VirtualMachineClone",
    "VirtualMachineCloneList",
    "VirtualMachineCloneSpec",
    "VirtualMachineCloneStatus",
    "VirtualMachineCloneTemplateFilters",
]

CLONE_GROUP_NAME: Final = "clone.kubevirt.io"
CLONE_VERSIONS: Final = ("v1beta1", "v1alpha1")


class CloneCondition(Condition):
    """``Ready`` or ``Progressing``."""


class VirtualMachineCloneTemplateFilters(ApiModel):
    annotation_filters: list[str] | None = Field(
        default=None, alias="annotationFilters", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    label_filters: list[str] | None = Field(
        default=None, alias="labelFilters", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class VirtualMachineCloneSpec(ApiModel):
    source: core_v1.TypedLocalObjectReference
    target: core_v1.TypedLocalObjectReference | None = None
    annotation_filters: list[str] | None = Field(
        default=None, alias="annotationFilters", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    label_filters: list[str] | None = Field(
        default=None, alias="labelFilters", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    template: VirtualMachineCloneTemplateFilters | None = None
    new_mac_addresses: dict[str, str] | None = Field(default=None, alias="newMacAddresses")
    new_sm_bios_serial: str | None = Field(default=None, alias="newSMBiosSerial")
    patches: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})


class VirtualMachineCloneStatus(ApiModel):
    creation_time: Time | None = Field(
        default=None, alias="creationTime", json_schema_extra={"nullable": True}
    )
    phase: str | None = None
    conditions: list[CloneCondition] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    snapshot_name: str | None = Field(
        default=None, alias="snapshotName", json_schema_extra={"nullable": True}
    )
    restore_name: str | None = Field(default=None, alias="restoreName", json_schema_extra={"nullable": True})
    target_name: str | None = Field(default=None, alias="targetName", json_schema_extra={"nullable": True})


class VirtualMachineClone(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineCloneSpec
    status: VirtualMachineCloneStatus | None = None


class VirtualMachineCloneList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineClone]
