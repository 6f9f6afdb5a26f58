"""Phase 1 of the bridge binding, in the pod's network namespace.

The pod's address and MAC move to the VM: the pod link is renamed ``eth0-nic``, stripped of its
addresses, given another MAC and put on bridge ``k6t-eth0`` with the tap; a dummy ``eth0`` keeps the
pod's address and MAC for everyone who looks for them in the pod. The DHCP server's facts (the
address, gateway, routes, MAC, MTU) are returned for the cache, since the pod no longer shows them.
"""

from __future__ import annotations

import errno
import ipaddress
from collections.abc import Callable

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from kubevirt.network import names
from kubevirt.network.dhcp.config import DHCPConfig
from kubevirt.network.errors import PodNetworkError
from kubevirt.network.plan import PodBinding
from kubevirt.network.podnet import PodLink, discover, link_index
from kubevirt.network.setup import links
from kubevirt.network.setup.undo import UndoStack, all_or_nothing

BRPORT_NO_LEARNING = {"IFLA_BRPORT_LEARNING": 0}


def setup_bridge(binding: PodBinding, *, owner: int, persist: Callable[[DHCPConfig], None]) -> PodLink:
    """Builds the binding and ``persist``s the DHCP facts; leaves nothing behind if any step fails."""
    with IPRoute() as ipr, all_or_nothing() as undo:
        pod = discover(ipr, binding.pod_iface)
        dhcp = _dhcp_config(binding, pod)
        bridge = links.create_bridge(ipr, undo, binding.bridge)
        if pod.ipv4:
            links.add_address(
                ipr, undo, bridge, ipaddress.ip_interface(f"{names.bridge_fake_ip(binding.index)}/32")
            )
        links.set_up(ipr, undo, bridge)
        _enslave_pod_link(ipr, undo, pod, binding, bridge)
        links.create_tap(
            ipr, undo, binding.tap, master=bridge, mtu=pod.mtu, owner=owner, multi_queue=binding.queues > 1
        )
        _dummy_in_place_of(ipr, undo, pod)
        if pod.ipv4:
            links.set_sysctl(undo, "net.ipv4.conf.all.arp_ignore", "1")
        persist(dhcp)
        return pod


def _dhcp_config(binding: PodBinding, pod: PodLink) -> DHCPConfig:
    if not pod.ipv4:
        return DHCPConfig(name=binding.pod_iface, ipam_disabled=True)
    address = pod.ipv4[0]
    gateways = [r.gateway for r in pod.routes if r.gateway]
    if not gateways:
        raise PodNetworkError(f"no gateway address found in routes for {binding.pod_iface}")
    local = str(address.network)
    return DHCPConfig(
        name=binding.pod_iface,
        ip=address,
        mac=binding.mac or pod.mac,
        gateway=gateways[0],
        routes=tuple(r for r in pod.routes if r.destination != local),
        mtu=pod.mtu,
        advertising_ip=names.bridge_fake_ip(binding.index),
    )


def _enslave_pod_link(ipr: IPRoute, undo: UndoStack, pod: PodLink, binding: PodBinding, bridge: int) -> None:
    renamed = names.bridged_pod_iface_name(pod.name)
    index = pod.index
    ipr.link("set", index=index, state="down")
    undo.push("restore the pod link's addresses and routes", _restorer(ipr, pod))
    for address in pod.addresses:
        ipr.addr("del", index=index, address=str(address.ip), prefixlen=address.network.prefixlen)
    ipr.link("set", index=index, ifname=renamed)
    undo.push("restore the pod link's name", lambda: ipr.link("set", index=index, ifname=pod.name))
    bridge_mac = ipr.get_links(bridge)[0].get_attr("IFLA_ADDRESS")
    ipr.link("set", index=index, address=bridge_mac)  # the pod's own MAC goes to the VM
    undo.push("restore the pod link's MAC", lambda: ipr.link("set", index=index, address=pod.mac))
    links.set_sysctl(undo, f"net.ipv6.conf.{renamed}.disable_ipv6", "1")
    ipr.link("set", index=index, master=bridge)
    undo.push("release the pod link", lambda: ipr.link("set", index=index, master=0))
    ipr.brport("set", index=index, **BRPORT_NO_LEARNING)
    ipr.link("set", index=index, state="up")


def _dummy_in_place_of(ipr: IPRoute, undo: UndoStack, pod: PodLink) -> None:
    try:
        ipr.link("add", ifname=pod.name, kind="dummy", address=pod.mac, mtu=pod.mtu)
    except NetlinkError as err:
        if err.code != errno.EOPNOTSUPP:
            raise
        # A kernel without the dummy driver: a bridge without ports holds the addresses as well.
        ipr.link("add", ifname=pod.name, kind="bridge", address=pod.mac, mtu=pod.mtu)
    index = link_index(ipr, pod.name)
    assert index is not None
    undo.push("delete the dummy", lambda: ipr.link("del", index=index))
    for address in pod.addresses:
        ipr.addr("add", index=index, address=str(address.ip), prefixlen=address.network.prefixlen)


def _restorer(ipr: IPRoute, pod: PodLink) -> Callable[[], None]:
    def restore() -> None:
        ipr.link("set", index=pod.index, state="up")
        for address in pod.addresses:
            ipr.addr("replace", index=pod.index, address=str(address.ip), prefixlen=address.network.prefixlen)
        for route in pod.routes:
            if route.gateway:
                ipr.route("replace", dst=route.destination, gateway=route.gateway, oif=pod.index)

    return restore
