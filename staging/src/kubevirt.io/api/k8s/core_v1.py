"""Kubernetes ``core/v1`` types embedded in KubeVirt objects (scheduling, probes, PVC sources, DNS)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from kubevirt_api.base import ApiModel, Int32, Int64
from kubevirt_api.k8s import meta_v1
from kubevirt_api.resource import Quantity

__all__ = [
    "Affinity",
    "DownwardAPIVolumeFile",
    "ExecAction",
    "HTTPGetAction",
    "HTTPHeader",
    "LocalObjectReference",
    "NodeAffinity",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectFieldSelector",
    "PersistentVolumeClaimSpec",
    "PersistentVolumeClaimVolumeSource",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodDNSConfig",
    "PodDNSConfigOption",
    "PodResourceClaim",
    "PreferredSchedulingTerm",
    "ResourceClaim",
    "ResourceFieldSelector",
    "ResourceRequirements",
    "TCPSocketAction",
    "Toleration",
    "TopologySpreadConstraint",
    "TypedLocalObjectReference",
    "TypedObjectReference",
    "VolumeResourceRequirements",
    "WeightedPodAffinityTerm",
]


class PersistentVolumeClaimVolumeSource(ApiModel):
    claim_name: str = Field(alias="claimName")
    read_only: bool | None = Field(default=None, alias="readOnly")


class LocalObjectReference(ApiModel):
    name: str | None = Field(default=None, json_schema_extra={"default": ""})
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})


class ObjectFieldSelector(ApiModel):
    api_version: str | None = Field(default=None, alias="apiVersion")
    field_path: str = Field(alias="fieldPath")
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})


class ResourceFieldSelector(ApiModel):
    container_name: str | None = Field(default=None, alias="containerName")
    resource: str
    divisor: Quantity | None = None
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})


class DownwardAPIVolumeFile(ApiModel):
    path: str
    field_ref: ObjectFieldSelector | None = Field(default=None, alias="fieldRef")
    resource_field_ref: ResourceFieldSelector | None = Field(default=None, alias="resourceFieldRef")
    mode: Int32 | None = None


class ExecAction(ApiModel):
    command: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})


class HTTPHeader(ApiModel):
    name: str
    value: str


class HTTPGetAction(ApiModel):
    path: str | None = None
    port: int | str
    host: str | None = None
    scheme: str | None = None
    http_headers: list[HTTPHeader] | None = Field(
        default=None, alias="httpHeaders", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class TCPSocketAction(ApiModel):
    port: int | str
    host: str | None = None


class NodeSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})


class NodeSelectorTerm(ApiModel):
    match_expressions: list[NodeSelectorRequirement] | None = Field(
        default=None, alias="matchExpressions", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    match_fields: list[NodeSelectorRequirement] | None = Field(
        default=None, alias="matchFields", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})


class NodeSelector(ApiModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(
        alias="nodeSelectorTerms", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})


class PreferredSchedulingTerm(ApiModel):
    weight: Int32
    preference: NodeSelectorTerm


class NodeAffinity(ApiModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = Field(
        default=None, alias="requiredDuringSchedulingIgnoredDuringExecution"
    )
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = Field(
        default=None,
        alias="preferredDuringSchedulingIgnoredDuringExecution",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class PodAffinityTerm(ApiModel):
    label_selector: meta_v1.LabelSelector | None = Field(default=None, alias="labelSelector")
    namespaces: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})
    topology_key: str = Field(alias="topologyKey")
    namespace_selector: meta_v1.LabelSelector | None = Field(default=None, alias="namespaceSelector")
    match_label_keys: list[str] | None = Field(
        default=None, alias="matchLabelKeys", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    mismatch_label_keys: list[str] | None = Field(
        default=None, alias="mismatchLabelKeys", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class WeightedPodAffinityTerm(ApiModel):
    weight: Int32
    pod_affinity_term: PodAffinityTerm = Field(alias="podAffinityTerm")


class _PodAffinityTerms(ApiModel):
    """Required and preferred terms, shared by pod affinity and anti-affinity (same fields)."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = Field(
        default=None,
        alias="requiredDuringSchedulingIgnoredDuringExecution",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = Field(
        default=None,
        alias="preferredDuringSchedulingIgnoredDuringExecution",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class PodAffinity(_PodAffinityTerms):
    pass


class PodAntiAffinity(_PodAffinityTerms):
    pass


class Affinity(ApiModel):
    node_affinity: NodeAffinity | None = Field(default=None, alias="nodeAffinity")
    pod_affinity: PodAffinity | None = Field(default=None, alias="podAffinity")
    pod_anti_affinity: PodAntiAffinity | None = Field(default=None, alias="podAntiAffinity")


class Toleration(ApiModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int64 | None = Field(default=None, alias="tolerationSeconds")


class TopologySpreadConstraint(ApiModel):
    max_skew: Int32 = Field(alias="maxSkew")
    topology_key: str = Field(alias="topologyKey")
    when_unsatisfiable: str = Field(alias="whenUnsatisfiable")
    label_selector: meta_v1.LabelSelector | None = Field(default=None, alias="labelSelector")
    min_domains: Int32 | None = Field(default=None, alias="minDomains")
    node_affinity_policy: str | None = Field(default=None, alias="nodeAffinityPolicy")
    node_taints_policy: str | None = Field(default=None, alias="nodeTaintsPolicy")
    match_label_keys: list[str] | None = Field(
        default=None, alias="matchLabelKeys", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class PodDNSConfigOption(ApiModel):
    name: str | None = None
    value: str | None = None


class PodDNSConfig(ApiModel):
    nameservers: list[str] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    searches: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})
    options: list[PodDNSConfigOption] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class PodResourceClaim(ApiModel):
    name: str
    resource_claim_name: str | None = Field(default=None, alias="resourceClaimName")
    resource_claim_template_name: str | None = Field(default=None, alias="resourceClaimTemplateName")


class VolumeResourceRequirements(ApiModel):
    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None


class ResourceClaim(ApiModel):
    name: str
    request: str | None = None


class ResourceRequirements(ApiModel):
    """A container's compute resources (KubeVirt's VMI has its own type of the same name)."""

    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None
    claims: list[ResourceClaim] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


class TypedLocalObjectReference(ApiModel):
    api_group: str | None = Field(default=None, alias="apiGroup")
    kind: str
    name: str
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})


class TypedObjectReference(ApiModel):
    api_group: str | None = Field(default=None, alias="apiGroup")
    kind: str
    name: str
    namespace: str | None = None


class PersistentVolumeClaimSpec(ApiModel):
    access_modes: list[str] | None = Field(
        default=None, alias="accessModes", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    selector: meta_v1.LabelSelector | None = None
    resources: VolumeResourceRequirements | None = None
    volume_name: str | None = Field(default=None, alias="volumeName")
    storage_class_name: str | None = Field(default=None, alias="storageClassName")
    volume_mode: str | None = Field(default=None, alias="volumeMode")
    data_source: TypedLocalObjectReference | None = Field(default=None, alias="dataSource")
    data_source_ref: TypedObjectReference | None = Field(default=None, alias="dataSourceRef")
    volume_attributes_class_name: str | None = Field(default=None, alias="volumeAttributesClassName")
