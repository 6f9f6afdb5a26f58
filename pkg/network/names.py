"""The names and addresses KubeVirt gives the pieces of a pod-network binding."""

from __future__ import annotations

import ipaddress

POD_INTERFACE = "eth0"  # the pod's primary interface, as the CNI names it
PRIMARY_TAP = "tap0"
STATIC_MASQUERADE_BRIDGE_MAC = "02:00:00:00:00:00"
BRIDGE_FAKE_IP_BASE = "169.254.75.1"  # + the interface's index: the bridge binding's DHCP server address
DEFAULT_VM_CIDR = "10.0.2.0/24"
DEFAULT_VM_IPV6_CIDR = "fd10:0:2::/120"
LEGACY_MIGRATION_PORTS = (49152, 49153)  # libvirt's direct and block migration ports


def bridge_name(pod_iface: str) -> str:
    return "k6t-" + pod_iface


def bridged_pod_iface_name(pod_iface: str) -> str:
    """What the bridge binding renames the pod interface to, before it joins the bridge."""
    return f"{pod_iface}-nic"


def bridge_fake_ip(iface_index: int) -> str:
    return f"{BRIDGE_FAKE_IP_BASE}{iface_index}"


def gateway_and_vm_ip(cidr: str) -> tuple[ipaddress.IPv4Interface | ipaddress.IPv6Interface, str]:
    """The gateway (first host, with the CIDR's prefix) and the VM's address (the next one).

    Raises ``ValueError`` for a malformed CIDR or one without room for both."""
    network = ipaddress.ip_network(cidr, strict=False)
    if network.max_prefixlen - network.prefixlen < 2:
        raise ValueError(f"VM CIDR subnet is too small, at least 2 host addresses are required: {cidr}")
    gateway = network.network_address + 1
    return ipaddress.ip_interface(f"{gateway}/{network.prefixlen}"), str(gateway + 1)
