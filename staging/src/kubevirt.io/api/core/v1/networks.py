"""Networks (``spec.networks``): the pod network and Multus networks."""

from __future__ import annotations

from pydantic import Field

from kubevirt_api.base import ApiModel

__all__ = [
    "MultusNetwork",
    "Network",
    "NetworkSource",
    "PodNetwork",
]


class PodNetwork(ApiModel):
    vm_network_cidr: str | None = Field(default=None, alias="vmNetworkCIDR")
    vm_ipv6_network_cidr: str | None = Field(default=None, alias="vmIPv6NetworkCIDR")


class MultusNetwork(ApiModel):
    network_name: str = Field(alias="networkName")
    default: bool | None = None


class NetworkSource(ApiModel):
    pod: PodNetwork | None = None
    multus: MultusNetwork | None = None


class Network(NetworkSource):
    name: str
