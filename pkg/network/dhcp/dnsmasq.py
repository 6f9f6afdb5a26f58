"""dnsmasq's command line for one VM: a DHCP-only server that knows one MAC and nothing else.

dnsmasq is a well-kept, widely deployed DHCP server; it runs in the pod (one per VM interface) bound
to the binding's bridge, whose only other port is, for masquerade, nobody, and for the bridge binding
the pod link. ``dhcp-ignore=tag:!known`` keeps it silent for every MAC but the VM's; its DNS function
is off (``port=0``): the VM is handed the pod's name servers.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from kubevirt.network.dhcp.config import DHCPConfig
from kubevirt.network.dhcp.resolvconf import DNSSettings

INFINITE = "infinite"  # KubeVirt's lease never ends: the VM's address is fixed for its life
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


@dataclass(frozen=True)
class ServerSpec:
    interface: str  # where the server listens (the binding's bridge)
    config: DHCPConfig
    dns: DNSSettings
    hostname: str
    lease_file: str


def dnsmasq_args(spec: ServerSpec) -> list[str]:
    config = spec.config
    if config.ip is None and config.ipv6 is None:
        raise ValueError("the DHCP configuration has no address to hand out")
    host = f"{config.mac},set:vm"
    if config.ip is not None:
        host += f",{config.ip.ip}"
    if config.ipv6 is not None:
        host += f",[{config.ipv6.ip}]"  # DHCPv6, as KubeVirt's masquerade binding serves it
    if _HOSTNAME.match(spec.hostname):
        host += f",{spec.hostname}"
    args = [
        "--keep-in-foreground",
        "--conf-file=/dev/null",
        "--port=0",
        "--no-resolv",
        "--no-hosts",
        "--log-facility=-",
        "--log-dhcp",
        "--pid-file",
        f"--dhcp-leasefile={spec.lease_file}",
        f"--interface={spec.interface}",
        "--except-interface=lo",
        "--bind-interfaces",
        "--dhcp-authoritative",
        f"--dhcp-host={host},{INFINITE}",
        "--dhcp-ignore=tag:!known",
    ]
    if config.ipv6 is not None:
        args.append(f"--dhcp-range=tag:vm,{config.ipv6.ip},static,{config.ipv6.network.prefixlen},{INFINITE}")
    if config.ip is None:
        return args
    vm_ip = str(config.ip.ip)
    args.append(f"--dhcp-range=tag:vm,{vm_ip},static,{config.ip.netmask},{INFINITE}")
    if config.advertising_ip and ipaddress.ip_address(config.advertising_ip) not in config.ip.network:
        # The server's own address is outside the VM's subnet (the bridge binding's link-local one).
        args.append(f"--shared-network={spec.interface},{vm_ip}")
    if config.gateway:
        args.append(f"--dhcp-option=tag:vm,option:router,{config.gateway}")
    else:
        args.append("--dhcp-option=tag:vm,option:router")  # no router rather than dnsmasq's own address
    if spec.dns.nameservers:
        args.append(f"--dhcp-option=tag:vm,option:dns-server,{','.join(spec.dns.nameservers)}")
    else:
        args.append("--dhcp-option=tag:vm,option:dns-server")
    if spec.dns.search:
        args.append(f"--dhcp-option-force=tag:vm,option:domain-search,{','.join(spec.dns.search)}")
    if config.mtu:
        args.append(f"--dhcp-option-force=tag:vm,option:mtu,{config.mtu}")
    routes = _classless_routes(config)
    if routes:
        args.append(f"--dhcp-option-force=tag:vm,option:classless-static-route,{routes}")
    return args


def _classless_routes(config: DHCPConfig) -> str:
    """Option 121: a client that gets it ignores the router option, so the default route goes first."""
    pairs = []
    for route in config.routes:
        if not route.gateway:
            continue
        destination = "0.0.0.0/0" if route.destination in ("0.0.0.0/0", "default") else route.destination
        pairs.append(f"{destination},{route.gateway}")
    if pairs and not any(p.startswith("0.0.0.0/0,") for p in pairs) and config.gateway:
        pairs.insert(0, f"0.0.0.0/0,{config.gateway}")
    return ",".join(pairs)
