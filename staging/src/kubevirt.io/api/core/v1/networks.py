"""Networks (``spec.networks``): the pod network and Multus networks."""

from __future__ import annotations

from pydantic import Field, field_validator

from kubevirt_api.base import ApiModel
from kubevirt_api.core.v1.sanitizers import sanitize_cidr

__all__ = [
    "MultusNetwork",
    "Network",
    "NetworkSource",
    "PodNetwork",
]


class PodNetwork(ApiModel):
    vm_network_cidr: str | None = Field(default=None, alias="vmNetworkCIDR")
    vm_ipv6_network_cidr: str | None = Field(default=None, alias="vmIPv6NetworkCIDR")

    @field_validator("vm_network_cidr")
    @classmethod
    def _sanitize_cidr(cls, cidr: str | None) -> str | None:
        # KubeVirt cleans up the IPv4 CIDR only
        return None if cidr is None else sanitize_cidr(cidr) or cidr


class MultusNetwork(ApiModel):
    network_name: str = Field(alias="networkName")
    default: bool | None = None


class NetworkSource(ApiModel):
    pod: PodNetwork | None = None
    multus: MultusNetwork | None = None


class Network(NetworkSource):
    name: str
