"""Phase 2, in virt-launcher (inside the pod): the domain's tap interface and the VM's DHCP server.

The pod's network as phase 1 left it is read here: for masquerade the pod link (its MTU, its MAC for
the VM) and the VMI's VM network; for the bridge binding the DHCP cache phase 1 wrote into the pod.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubevirt.log import get_logger
from kubevirt.network import cache, names
from kubevirt.network.dhcp.config import DHCPConfig
from kubevirt.network.dhcp.resolvconf import DNSSettings, parse_resolv_conf
from kubevirt.network.dhcp.server import DHCPServer, ServerSpec
from kubevirt.network.errors import PodNetworkError
from kubevirt.network.linkinfo import global_address_families, link, link_index
from kubevirt.network.plan import PodBinding, pod_binding
from kubevirt.podroot import PodRoot


@dataclass(frozen=True)
class TapInterface:
    """What the domain's ``<interface>`` ``name`` needs from the pod: ``<target>``, ``<mac>``, ``<mtu>``."""

    name: str
    target: str
    mac: str
    mtu: int


def masquerade_dhcp_config(binding: PodBinding, *, mac: str, mtu: int, ipv4: bool, ipv6: bool) -> DHCPConfig:
    """The VM's addresses behind the masquerade bridge, for each IP family the pod has."""
    config = DHCPConfig(name=binding.pod_iface, mac=mac, mtu=mtu)
    if ipv4:
        gateway, vm = names.gateway_and_vm_ip(binding.vm_cidr)
        config = dataclasses.replace(
            config,
            ip=ipaddress.IPv4Interface(f"{vm}/{gateway.network.prefixlen}"),
            advertising_ip=str(gateway.ip),
            gateway=str(gateway.ip),
        )
    if ipv6:
        gateway6, vm6 = names.gateway_and_vm_ip(binding.vm_ipv6_cidr)
        config = dataclasses.replace(
            config,
            ipv6=ipaddress.IPv6Interface(f"{vm6}/{gateway6.network.prefixlen}"),
            advertising_ipv6=str(gateway6.ip),
        )
    return config


class LauncherNetwork:
    def __init__(
        self,
        *,
        root: PodRoot | None = None,
        resolv_conf: Path = Path("/etc/resolv.conf"),
    ) -> None:
        self._root = root or PodRoot(Path("/"))
        self._resolv_conf = resolv_conf
        self.servers: dict[str, DHCPServer] = {}
        self._log = get_logger()

    def prepare(self, vmi: Mapping[str, Any]) -> list[TapInterface]:
        """The tap interfaces of ``vmi``'s domain, with their DHCP servers running."""
        binding = pod_binding(vmi.get("spec") or {})
        if binding is None:
            return []
        pod = link(binding.pod_iface)
        families = global_address_families(binding.pod_iface) if binding.binding == "masquerade" else None
        target = binding.tap if link_index(binding.tap) is not None else binding.pod_iface
        if link_index(binding.bridge) is None:
            raise PodNetworkError(f"bridge ({binding.bridge}) is missing: the pod network is not set up")
        bridge_mac = link(binding.bridge).mac
        mtu = pod.mtu
        if binding.binding == "bridge":
            mtu = link(names.bridged_pod_iface_name(binding.pod_iface)).mtu
        mac = binding.mac or pod.mac
        if binding.binding == "masquerade":
            assert families is not None
            config = masquerade_dhcp_config(binding, mac=mac, mtu=mtu, ipv4=families.ipv4, ipv6=families.ipv6)
        else:
            cached = cache.read_dhcp_cache(self._root, binding.pod_iface)
            config = dataclasses.replace(cached, mtu=mtu, mac=cached.mac or mac)
        has_address = config.ip is not None or config.ipv6 is not None
        if has_address and not config.ipam_disabled and binding.name not in self.servers:
            self._start_server(vmi, binding, config, bridge_mac)
        return [TapInterface(name=binding.name, target=target, mac=mac, mtu=mtu)]

    def _start_server(
        self, vmi: Mapping[str, Any], binding: PodBinding, config: DHCPConfig, bridge_mac: str
    ) -> None:
        try:
            dns = parse_resolv_conf(self._resolv_conf.read_text())
        except OSError:
            dns = DNSSettings(nameservers=(), search=())
        spec = vmi.get("spec") or {}
        server = DHCPServer(
            ServerSpec(
                interface=binding.bridge,
                interface_mac=bridge_mac,
                config=config,
                dns=dns,
                hostname=str(spec.get("hostname") or vmi["metadata"]["name"]),
            )
        )
        server.start()
        self.servers[binding.name] = server

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers.clear()
