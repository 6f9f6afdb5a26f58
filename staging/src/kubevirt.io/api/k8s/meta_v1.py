"""Kubernetes ``meta/v1`` types embedded in KubeVirt objects."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from kubevirt_api.base import ApiModel, Int64, Time

__all__ = [
    "LabelSelector",
    "LabelSelectorRequirement",
    "ListMeta",
    "ManagedFieldsEntry",
    "ObjectMeta",
    "OwnerReference",
    "TypeMeta",
]


class TypeMeta(ApiModel):
    kind: str | None = None
    api_version: str | None = Field(default=None, alias="apiVersion")


class OwnerReference(ApiModel):
    api_version: str = Field(alias="apiVersion")
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = Field(default=None, alias="blockOwnerDeletion")
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})


class ManagedFieldsEntry(ApiModel):
    manager: str | None = None
    operation: str | None = None
    api_version: str | None = Field(default=None, alias="apiVersion")
    time: Time | None = None
    fields_type: str | None = Field(default=None, alias="fieldsType")
    fields_v1: dict[str, Any] | None = Field(default=None, alias="fieldsV1")
    subresource: str | None = None


class ObjectMeta(ApiModel):
    name: str | None = None
    generate_name: str | None = Field(default=None, alias="generateName")
    namespace: str | None = None
    self_link: str | None = Field(default=None, alias="selfLink")
    uid: str | None = None
    resource_version: str | None = Field(default=None, alias="resourceVersion")
    generation: Int64 | None = None
    creation_timestamp: Time | None = Field(default=None, alias="creationTimestamp")
    deletion_timestamp: Time | None = Field(default=None, alias="deletionTimestamp")
    deletion_grace_period_seconds: Int64 | None = Field(default=None, alias="deletionGracePeriodSeconds")
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = Field(
        default=None,
        alias="ownerReferences",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"]},
    )
    finalizers: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "set"})
    managed_fields: list[ManagedFieldsEntry] | None = Field(
        default=None, alias="managedFields", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class LabelSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})


class LabelSelector(ApiModel):
    match_labels: dict[str, str] | None = Field(default=None, alias="matchLabels")
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        default=None, alias="matchExpressions", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})


class ListMeta(ApiModel):
    self_link: str | None = Field(default=None, alias="selfLink")
    resource_version: str | None = Field(default=None, alias="resourceVersion")
    continue_: str | None = Field(default=None, alias="continue")
    remaining_item_count: Int64 | None = Field(default=None, alias="remainingItemCount")
