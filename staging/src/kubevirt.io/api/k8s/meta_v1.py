"""Kubernetes ``meta/v1`` types embedded in KubeVirt objects."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kubevirt_api.base import ApiModel

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


class ManagedFieldsEntry(ApiModel):
    manager: str | None = None
    operation: str | None = None
    api_version: str | None = Field(default=None, alias="apiVersion")
    time: str | None = None
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
    generation: int | None = None
    creation_timestamp: str | None = Field(default=None, alias="creationTimestamp")
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")
    deletion_grace_period_seconds: int | None = Field(default=None, alias="deletionGracePeriodSeconds")
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = Field(default=None, alias="ownerReferences")
    finalizers: list[str] | None = None
    managed_fields: list[ManagedFieldsEntry] | None = Field(default=None, alias="managedFields")


class LabelSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(ApiModel):
    match_labels: dict[str, str] | None = Field(default=None, alias="matchLabels")
    match_expressions: list[LabelSelectorRequirement] | None = Field(default=None, alias="matchExpressions")


class ListMeta(ApiModel):
    self_link: str | None = Field(default=None, alias="selfLink")
    resource_version: str | None = Field(default=None, alias="resourceVersion")
    continue_: str | None = Field(default=None, alias="continue")
    remaining_item_count: int | None = Field(default=None, alias="remainingItemCount")
