"""VirtualMachinePool (``pool.kubevirt.io/v1alpha1``)."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kubevirt_api.base import ApiModel, Condition, Int32, TypeMeta
from kubevirt_api.core.v1.vm import VirtualMachineSpec
from kubevirt_api.k8s import meta_v1

__all__ = [
    "VirtualMachinePool",
    "VirtualMachinePoolBasePolicy",
    "VirtualMachinePoolCondition",
    "VirtualMachinePoolConditionType",
    "VirtualMachinePoolList",
    "VirtualMachinePoolNameGeneration",
    "VirtualMachinePoolProactiveScaleInStrategy",
    "VirtualMachinePoolScaleInStrategy",
    "VirtualMachinePoolSelectionPolicy",
    "VirtualMachinePoolSpec",
    "VirtualMachinePoolStatus",
    "VirtualMachineTemplateSpec",
]


class VirtualMachinePoolBasePolicy:
    """Values of the string field typed ``VirtualMachinePoolBasePolicy``."""

    RANDOM: Final = "Random"
    DESCENDING_ORDER: Final = "DescendingOrder"


class VirtualMachinePoolConditionType:
    """Values of the string field typed ``VirtualMachinePoolConditionType``."""

    FAILURE: Final = "ReplicaFailure"
    PAUSED: Final = "ReplicaPaused"


class VirtualMachineTemplateSpec(ApiModel):
    metadata: meta_v1.ObjectMeta | None = Field(
        default=None, json_schema_extra={"x-kubernetes-preserve-unknown-fields": True, "nullable": True}
    )
    spec: VirtualMachineSpec | None = None


class VirtualMachinePoolNameGeneration(ApiModel):
    append_index_to_config_map_refs: bool | None = Field(default=None, alias="appendIndexToConfigMapRefs")
    append_index_to_secret_refs: bool | None = Field(default=None, alias="appendIndexToSecretRefs")


class VirtualMachinePoolSelectionPolicy(ApiModel):
    base_policy: str | None = Field(
        default=None, alias="basePolicy", json_schema_extra={"enum": ["Random", "DescendingOrder"]}
    )


class VirtualMachinePoolProactiveScaleInStrategy(ApiModel):
    selection_policy: VirtualMachinePoolSelectionPolicy | None = Field(default=None, alias="selectionPolicy")


class VirtualMachinePoolScaleInStrategy(ApiModel):
    proactive: VirtualMachinePoolProactiveScaleInStrategy | None = None


class VirtualMachinePoolSpec(ApiModel):
    replicas: Int32 | None = None
    selector: meta_v1.LabelSelector
    virtual_machine_template: VirtualMachineTemplateSpec = Field(alias="virtualMachineTemplate")
    paused: bool | None = None
    name_generation: VirtualMachinePoolNameGeneration | None = Field(default=None, alias="nameGeneration")
    max_unavailable: int | str | None = Field(default=None, alias="maxUnavailable")
    scale_in_strategy: VirtualMachinePoolScaleInStrategy | None = Field(default=None, alias="scaleInStrategy")


class VirtualMachinePoolCondition(Condition):
    pass


class VirtualMachinePoolStatus(ApiModel):
    replicas: Int32 | None = None
    ready_replicas: Int32 | None = Field(default=None, alias="readyReplicas")
    conditions: list[VirtualMachinePoolCondition] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    label_selector: str | None = Field(default=None, alias="labelSelector")


class VirtualMachinePool(TypeMeta):
    metadata: meta_v1.ObjectMeta | None = None
    spec: VirtualMachinePoolSpec
    status: VirtualMachinePoolStatus | None = None


class VirtualMachinePoolList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachinePool]
