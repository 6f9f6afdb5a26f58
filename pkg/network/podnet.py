"""The pod's network as netlink shows it, read and changed through pyroute2 in the current namespace."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubevirt.network.errors import PodNetworkError

if TYPE_CHECKING:  # virt-launcher imports this module for Route and reads links without pyroute2
    from pyroute2 import IPRoute

IPInterface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


@dataclass(frozen=True)
class Route:
    destination: str  # a CIDR; 0.0.0.0/0 for the default route
    gateway: str | None


@dataclass(frozen=True)
class PodLink:
    name: str
    index: int
    mac: str
    mtu: int
    ipv4: tuple[ipaddress.IPv4Interface, ...]  # global unicast only
    ipv6: tuple[ipaddress.IPv6Interface, ...]
    routes: tuple[Route, ...]  # IPv4 routes through this link

    @property
    def addresses(self) -> tuple[IPInterface, ...]:
        return (*self.ipv4, *self.ipv6)


def global_unicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return not (ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified)


def link_index(ipr: IPRoute, name: str) -> int | None:
    found = ipr.link_lookup(ifname=name)
    return int(found[0]) if found else None


def discover(ipr: IPRoute, name: str) -> PodLink:
    """The pod link ``name``; :class:`PodNetworkError` when it is missing."""
    index = link_index(ipr, name)
    if index is None:
        raise PodNetworkError(f"pod link ({name}) is missing")
    link = ipr.get_links(index)[0]
    ipv4: list[ipaddress.IPv4Interface] = []
    ipv6: list[ipaddress.IPv6Interface] = []
    for message in ipr.get_addr(index=index):
        address = ipaddress.ip_interface(f"{message.get_attr('IFA_ADDRESS')}/{message['prefixlen']}")
        if not global_unicast(address.ip):
            continue
        if isinstance(address, ipaddress.IPv4Interface):
            ipv4.append(address)
        else:
            ipv6.append(address)
    routes = []
    for message in ipr.get_routes(family=2, oif=index, table=254):
        destination = message.get_attr("RTA_DST")
        routes.append(
            Route(
                destination=f"{destination}/{message['dst_len']}" if destination else "0.0.0.0/0",
                gateway=message.get_attr("RTA_GATEWAY"),
            )
        )
    return PodLink(
        name=name,
        index=index,
        mac=str(link.get_attr("IFLA_ADDRESS")),
        mtu=int(link.get_attr("IFLA_MTU")),
        ipv4=tuple(ipv4),
        ipv6=tuple(ipv6),
        routes=tuple(routes),
    )


def link_attrs(ipr: IPRoute, name: str) -> dict[str, Any]:
    index = link_index(ipr, name)
    if index is None:
        raise PodNetworkError(f"link ({name}) is missing")
    link = ipr.get_links(index)[0]
    return {"index": index, "mac": link.get_attr("IFLA_ADDRESS"), "mtu": link.get_attr("IFLA_MTU")}


def read_sysctl(key: str) -> str:
    """A ``net.*`` setting of the current thread's network namespace."""
    return Path("/proc/sys", *key.split(".")).read_text().strip()


def write_sysctl(key: str, value: str) -> None:
    Path("/proc/sys", *key.split(".")).write_text(value)
