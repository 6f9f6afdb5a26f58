"""Phase 1 of the masquerade binding, in the pod's network namespace.

The VM sits behind bridge ``k6t-eth0`` (the gateway address, KubeVirt's fixed MAC, the pod's MTU) on
tap ``tap0``; the pod keeps its address and NATs to and from the VM with nftables.
"""

from __future__ import annotations

from collections.abc import Callable

from pyroute2 import IPRoute

from kubevirt.network import names
from kubevirt.network.nft.libnft import Nft
from kubevirt.network.nft.masquerade import NAT_TABLE, FamilyAddresses, nat_commands
from kubevirt.network.plan import PodBinding
from kubevirt.network.podnet import PodLink, discover
from kubevirt.network.setup import links
from kubevirt.network.setup.undo import all_or_nothing


def setup_masquerade(binding: PodBinding, *, owner: int, legacy_migration_ports: bool) -> PodLink:
    """Builds the binding; returns the pod link as found. Leaves nothing behind if any step fails."""
    with IPRoute() as ipr, Nft() as nft, all_or_nothing() as undo:
        pod = discover(ipr, binding.pod_iface)
        families: list[FamilyAddresses] = []
        bridge = links.create_bridge(
            ipr, undo, binding.bridge, mac=names.STATIC_MASQUERADE_BRIDGE_MAC, mtu=pod.mtu
        )
        if pod.ipv4:
            gateway, vm = names.gateway_and_vm_ip(binding.vm_cidr)
            links.add_address(ipr, undo, bridge, gateway)
            links.set_sysctl(undo, "net.ipv4.ip_forward", "1")
            links.set_sysctl(undo, f"net.ipv4.conf.{binding.bridge}.route_localnet", "1")
            families.append(FamilyAddresses("ip", str(gateway.ip), vm))
        if pod.ipv6:
            gateway6, vm6 = names.gateway_and_vm_ip(binding.vm_ipv6_cidr)
            links.add_address(ipr, undo, bridge, gateway6)
            links.set_sysctl(undo, "net.ipv6.conf.all.forwarding", "1")
            families.append(FamilyAddresses("ip6", str(gateway6.ip), vm6))
        links.set_up(ipr, undo, bridge)
        links.create_tap(
            ipr,
            undo,
            binding.tap,
            master=bridge,
            mtu=pod.mtu,
            owner=owner,
            multi_queue=binding.queues > 1,
        )
        reserved = names.LEGACY_MIGRATION_PORTS if legacy_migration_ports else ()
        for family in families:
            undo.push(f"delete table {family.family} nat", _deleter(nft, family.family))
            nft.run_all(
                nat_commands(
                    family,
                    pod_iface=binding.pod_iface,
                    bridge=binding.bridge,
                    ports=binding.ports,
                    reserved_ports=reserved,
                )
            )
        return pod


def _deleter(nft: Nft, family: str) -> Callable[[], None]:
    def delete() -> None:
        nft.run(f"delete table {family} {NAT_TABLE}")

    return delete
