"""VirtualMachineInstanceReplicaSet."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Condition, Int32, TypeMeta
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceTemplateSpec
from kubevirt_api.k8s import meta_v1

__all__ = [
    "VirtualMachineInstanceReplicaSet",
    "VirtualMachineInstanceReplicaSetCondition",
    "VirtualMachineInstanceReplicaSetConditionType",
    "VirtualMachineInstanceReplicaSetList",
    "VirtualMachineInstanceReplicaSetSpec",
    "VirtualMachineInstanceReplicaSetStatus",
]


class VirtualMachineInstanceReplicaSetConditionType:
    """Values of the string field typed ``VirtualMachineInstanceReplicaSetConditionType``."""

    FAILURE: Final = "ReplicaFailure"
    PAUSED: Final = "ReplicaPaused"


class VirtualMachineInstanceReplicaSetSpec(ApiModel):
    replicas: Int32 | None = None
    selector: meta_v1.LabelSelector
    template: VirtualMachineInstanceTemplateSpec
    paused: bool | None = None


class VirtualMachineInstanceReplicaSetCondition(Condition):
    pass


class VirtualMachineInstanceReplicaSetStatus(ApiModel):
    replicas: Int32 | None = None
    ready_replicas: Int32 | None = Field(default=None, alias="readyReplicas")
    conditions: list[VirtualMachineInstanceReplicaSetCondition] | None = None
    label_selector: str | None = Field(default=None, alias="labelSelector")


class VirtualMachineInstanceReplicaSet(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachineInstanceReplicaSetSpec
    status: VirtualMachineInstanceReplicaSetStatus | None = Field(
        default=None, json_schema_extra={"nullable": True}
    )


class VirtualMachineInstanceReplicaSetList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineInstanceReplicaSet]
