"""Which of a VMI's interfaces is bound to the pod network, and how (pure: no I/O).

Only the pod network's masquerade and bridge bindings are set up here; SR-IOV and binding plugins are
left to their own machinery, and secondary (Multus) networks are refused, as KubeVirt does when Multus
is absent. Every refusal names the VMI field at fault.

The spec is read as plain JSON, not through the typed API: virt-launcher plans its phase 2 with this
module too, and importing the typed API there would cost each launcher a quarter of a CPU-second under
its VMI's CPU limit. Only the fields used here are checked; virt-api checked the rest at admission.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kubevirt.hardware import number_of_vcpus
from kubevirt.network import names
from kubevirt.network.errors import NetworkConfigError
from kubevirt_api.view import FieldError, View

Binding = Literal["masquerade", "bridge"]
PROTOCOLS = ("TCP", "UDP")
MAX_TAP_QUEUES = 256  # the kernel's most queues for one tap, KubeVirt's cap
_MAC = re.compile(r"^[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(\1[0-9A-Fa-f]{2}){4}$")


@dataclass(frozen=True)
class ForwardedPort:
    port: int
    protocol: str  # lower case, as nft spells it


@dataclass(frozen=True)
class PodBinding:
    """The VMI interface bound to the pod network, and what its setup needs."""

    binding: Binding
    name: str  # the VMI's interface (and network) name
    index: int  # its position in spec.domain.devices.interfaces
    pod_iface: str
    tap: str
    bridge: str
    ports: tuple[ForwardedPort, ...]
    mac: str | None  # spec.macAddress, when the user chose one
    vm_cidr: str
    vm_ipv6_cidr: str
    model: str
    # The tap's queues: the guest's vCPUs (at most 256) with networkInterfaceMultiqueue, else 0; libvirt
    # opens a multi-queue tap only when it was made one.
    queues: int = 0


@dataclass(frozen=True)
class _Network:
    name: str
    pod: Mapping[str, Any] | None
    multus: bool


@dataclass(frozen=True)
class _Interface:
    name: str
    state: str | None
    masquerade: bool
    bridge: bool
    mac_address: str | None
    ports: tuple[tuple[str | None, int, str], ...]  # (name, port, protocol as written)
    model: str | None


def _network(network: View) -> _Network:
    pod = network.optional_object("pod")
    if pod is not None:
        for key in ("vmNetworkCIDR", "vmIPv6NetworkCIDR"):
            pod.string(key)
    return _Network(
        name=network.string("name", required=True),
        pod=pod.data if pod is not None else None,
        multus=network.optional_object("multus") is not None,
    )


def _interface(interface: View) -> _Interface:
    ports = [
        (port.optional_string("name"), _port_number(port), port.string("protocol", default="TCP"))
        for port in interface.items("ports")
    ]
    return _Interface(
        name=interface.string("name", required=True),
        state=interface.optional_string("state"),
        masquerade=interface.optional_object("masquerade") is not None,
        bridge=interface.optional_object("bridge") is not None,
        mac_address=interface.optional_string("macAddress"),
        ports=tuple(ports),
        model=interface.optional_string("model"),
    )


def _port_number(port: View) -> int:
    if not port.has("port"):
        raise port.fail("port", "Required value")
    return port.integer("port")


def _ports(iface: _Interface, field: str) -> tuple[ForwardedPort, ...]:
    seen: dict[tuple[int, str], int] = {}
    names_seen: set[str] = set()
    found = []
    for index, (name, port, protocol) in enumerate(iface.ports):
        where = f"{field}.ports[{index}]"
        if protocol not in PROTOCOLS:
            raise NetworkConfigError(f"{where}.protocol", "Unknown protocol, only TCP or UDP allowed")
        if not 0 < port < 65536:
            raise NetworkConfigError(f"{where}.port", f"port {port} is out of range (1-65535)")
        if name:
            if name in names_seen:
                raise NetworkConfigError(f"{where}.name", f"Duplicate name of the port: {name}")
            names_seen.add(name)
        key = (port, protocol)
        if key in seen:
            raise NetworkConfigError(
                f"{where}.port",
                f"port {port}/{protocol} conflicts with {field}.ports[{seen[key]}]",
            )
        seen[key] = index
        found.append(ForwardedPort(port=port, protocol=protocol.lower()))
    return tuple(found)


def _vm_cidr(pod: Mapping[str, Any]) -> str:
    cidr = pod.get("vmNetworkCIDR")
    if not cidr:
        return names.DEFAULT_VM_CIDR
    # As the typed API reads it (KubeVirt cleans up the IPv4 CIDR only); imported only when one is set.
    from kubevirt_api.core.v1.sanitizers import sanitize_cidr

    return sanitize_cidr(cidr) or str(cidr)


def _queues(spec: View) -> int:
    """KubeVirt's ``NetworkQueuesCapacity``."""
    domain = spec.object("domain")
    if not domain.object("devices").boolean("networkInterfaceMultiqueue"):
        return 0
    cpu = domain.object("cpu")
    parts = {key: cpu.integer(key, minimum=0) for key in ("cores", "sockets", "threads")}
    return min(number_of_vcpus(parts) or 1, MAX_TAP_QUEUES)


def pod_binding(spec: Mapping[str, Any]) -> PodBinding | None:
    """The pod-network binding of a VMI ``spec`` (None: the VMI is not on the pod network).

    Raises :class:`NetworkConfigError` for what cannot be set up."""
    try:
        return _pod_binding(View.of(spec, "spec"))
    except FieldError as err:
        raise NetworkConfigError(err.path, err.reason) from None


def _pod_binding(spec: View) -> PodBinding | None:
    networks: dict[str, tuple[int, _Network]] = {}
    for index, raw in enumerate(spec.items("networks")):
        network = _network(raw)
        if network.multus:
            raise NetworkConfigError(
                f"spec.networks[{index}].multus",
                f"network {network.name!r} needs Multus, which this cluster does not provide",
            )
        networks[network.name] = (index, network)
    found: PodBinding | None = None
    for index, raw in enumerate(spec.object("domain").object("devices").items("interfaces")):
        field = raw.path
        iface = _interface(raw)
        if iface.state == "absent":
            continue
        if iface.name not in networks:
            raise NetworkConfigError(f"{field}.name", f"'{iface.name}' not found.")
        network = networks[iface.name][1]
        binding: Binding
        if iface.masquerade:
            binding = "masquerade"
        elif iface.bridge:
            binding = "bridge"
        else:
            continue  # SR-IOV and plugins are not set up here
        if network.pod is None:
            if binding == "masquerade":
                raise NetworkConfigError(
                    f"{field}.name", "Masquerade interface only implemented with pod network"
                )
            continue  # a bridge on a secondary network: refused above with the network
        if found is not None:
            raise NetworkConfigError(
                f"{field}.name",
                "more than one interface is connected to a pod network in spec.domain.devices.interfaces",
            )
        if iface.mac_address and not _MAC.match(iface.mac_address):
            raise NetworkConfigError(f"{field}.macAddress", f"malformed MAC address ({iface.mac_address})")
        if iface.ports and binding != "masquerade":
            raise NetworkConfigError(f"{field}.ports", "ports are only forwarded by the masquerade binding")
        found = PodBinding(
            binding=binding,
            name=iface.name,
            index=index,
            pod_iface=names.POD_INTERFACE,
            tap=names.PRIMARY_TAP,
            bridge=names.bridge_name(names.POD_INTERFACE),
            ports=_ports(iface, field),
            mac=iface.mac_address.replace("-", ":").lower() if iface.mac_address else None,
            vm_cidr=_vm_cidr(network.pod),
            vm_ipv6_cidr=network.pod.get("vmIPv6NetworkCIDR") or names.DEFAULT_VM_IPV6_CIDR,
            model=iface.model or "virtio",
            queues=_queues(spec),
        )
        if binding == "masquerade":
            for cidr, key in ((found.vm_cidr, "vmNetworkCIDR"), (found.vm_ipv6_cidr, "vmIPv6NetworkCIDR")):
                try:
                    names.gateway_and_vm_ip(cidr)
                except ValueError as err:
                    where = networks[iface.name][0]
                    raise NetworkConfigError(f"spec.networks[{where}].pod.{key}", str(err)) from None
    return found
