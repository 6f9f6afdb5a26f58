"""What the VM is told by DHCP, and its JSON form in the pod (KubeVirt's ``vif-cache-<iface>.json``).

The JSON keeps the layout of KubeVirt's cached ``DHCPConfig`` (Go's encoding: an address as ``IP`` and
a base64 ``Mask``, a MAC as base64 bytes), so phase 1 and phase 2 of either implementation agree.
"""

from __future__ import annotations

import base64
import ipaddress
import json
from dataclasses import dataclass, field
from typing import Any

from kubevirt.network.podnet import Route


@dataclass(frozen=True)
class DHCPConfig:
    name: str = ""  # the pod interface
    ip: ipaddress.IPv4Interface | None = None  # the VM's address and prefix
    ipv6: ipaddress.IPv6Interface | None = None
    mac: str = ""
    advertising_ip: str = ""  # the server's address (the masquerade gateway, or the bridge's fake IP)
    advertising_ipv6: str = ""
    gateway: str = ""
    routes: tuple[Route, ...] = ()
    mtu: int = 0
    ipam_disabled: bool = False
    subdomain: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "Name": self.name,
                "IP": _go_addr(self.ip),
                "IPv6": _go_addr(self.ipv6),
                "MAC": base64.b64encode(bytes.fromhex(self.mac.replace(":", ""))).decode()
                if self.mac
                else None,
                "AdvertisingIPAddr": self.advertising_ip or None,
                "AdvertisingIPv6Addr": self.advertising_ipv6 or None,
                "Routes": [_go_route(r) for r in self.routes] or None,
                "Mtu": self.mtu,
                "IPAMDisabled": self.ipam_disabled,
                "Gateway": self.gateway or None,
                "Subdomain": self.subdomain,
            },
            indent=2,
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> DHCPConfig:
        doc = json.loads(data)
        ip = _from_go_addr(doc.get("IP"))
        ipv6 = _from_go_addr(doc.get("IPv6"))
        mac = doc.get("MAC")
        return cls(
            name=doc.get("Name") or "",
            ip=ip if isinstance(ip, ipaddress.IPv4Interface) else None,
            ipv6=ipv6 if isinstance(ipv6, ipaddress.IPv6Interface) else None,
            mac=":".join(f"{b:02x}" for b in base64.b64decode(mac)) if mac else "",
            advertising_ip=doc.get("AdvertisingIPAddr") or "",
            advertising_ipv6=doc.get("AdvertisingIPv6Addr") or "",
            routes=tuple(_from_go_route(r) for r in doc.get("Routes") or []),
            mtu=int(doc.get("Mtu") or 0),
            ipam_disabled=bool(doc.get("IPAMDisabled")),
            gateway=doc.get("Gateway") or "",
            subdomain=doc.get("Subdomain") or "",
        )


def _go_addr(address: ipaddress.IPv4Interface | ipaddress.IPv6Interface | None) -> dict[str, Any] | None:
    if address is None:
        return None
    return {"IP": str(address.ip), "Mask": base64.b64encode(address.netmask.packed).decode()}


def _from_go_addr(doc: Any) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface | None:
    if not isinstance(doc, dict) or not doc.get("IP") or not doc.get("Mask"):
        return None
    mask = base64.b64decode(doc["Mask"])
    prefix = sum(bin(b).count("1") for b in mask)
    return ipaddress.ip_interface(f"{doc['IP']}/{prefix}")


def _go_route(route: Route) -> dict[str, Any]:
    default = route.destination in ("0.0.0.0/0", "::/0")
    dst = None
    if not default:
        network = ipaddress.ip_network(route.destination, strict=False)
        dst = {"IP": str(network.network_address), "Mask": base64.b64encode(network.netmask.packed).decode()}
    return {"Dst": dst, "Gw": route.gateway}


def _from_go_route(doc: dict[str, Any]) -> Route:
    dst = doc.get("Dst")
    destination = "0.0.0.0/0"
    if dst:
        address = _from_go_addr(dst)
        if address is not None:
            destination = str(address.network)
    return Route(destination=destination, gateway=doc.get("Gw"))
