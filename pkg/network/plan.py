"""Which of a VMI's interfaces is bound to the pod network, and how (pure: no I/O).

Only the pod network's masquerade and bridge bindings are set up here; SR-IOV and binding plugins are
left to their own machinery, and secondary (Multus) networks are refused, as KubeVirt does when Multus
is absent. Every refusal names the VMI field at fault.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kubevirt.network import names
from kubevirt.network.errors import NetworkConfigError
from kubevirt_api.base import ApiParseError
from kubevirt_api.core.v1 import Interface, Network

Binding = Literal["masquerade", "bridge"]
PROTOCOLS = ("TCP", "UDP")
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


def _parse(cls: Any, data: Any, field: str) -> Any:
    try:
        return cls.from_dict(data)
    except ApiParseError as err:
        raise NetworkConfigError(field, str(err)) from None


def _ports(iface: Interface, field: str) -> tuple[ForwardedPort, ...]:
    seen: dict[tuple[int, str], int] = {}
    names_seen: set[str] = set()
    found = []
    for index, port in enumerate(iface.ports or []):
        where = f"{field}.ports[{index}]"
        protocol = port.protocol or "TCP"
        if protocol not in PROTOCOLS:
            raise NetworkConfigError(f"{where}.protocol", "Unknown protocol, only TCP or UDP allowed")
        if not 0 < port.port < 65536:
            raise NetworkConfigError(f"{where}.port", f"port {port.port} is out of range (1-65535)")
        if port.name:
            if port.name in names_seen:
                raise NetworkConfigError(f"{where}.name", f"Duplicate name of the port: {port.name}")
            names_seen.add(port.name)
        key = (port.port, protocol)
        if key in seen:
            raise NetworkConfigError(
                f"{where}.port",
                f"port {port.port}/{protocol} conflicts with {field}.ports[{seen[key]}]",
            )
        seen[key] = index
        found.append(ForwardedPort(port=port.port, protocol=protocol.lower()))
    return tuple(found)


def pod_binding(spec: Mapping[str, Any]) -> PodBinding | None:
    """The pod-network binding of a VMI ``spec`` (None: the VMI is not on the pod network).

    Raises :class:`NetworkConfigError` for what cannot be set up."""
    networks: dict[str, tuple[int, Network]] = {}
    for index, raw in enumerate(spec.get("networks") or []):
        network: Network = _parse(Network, raw, f"spec.networks[{index}]")
        if network.multus is not None:
            raise NetworkConfigError(
                f"spec.networks[{index}].multus",
                f"network {network.name!r} needs Multus, which this cluster does not provide",
            )
        networks[network.name] = (index, network)
    interfaces: Sequence[Any] = ((spec.get("domain") or {}).get("devices") or {}).get("interfaces") or []
    found: PodBinding | None = None
    for index, raw in enumerate(interfaces):
        field = f"spec.domain.devices.interfaces[{index}]"
        iface: Interface = _parse(Interface, raw, field)
        if iface.state == "absent":
            continue
        if iface.name not in networks:
            raise NetworkConfigError(f"{field}.name", f"'{iface.name}' not found.")
        network = networks[iface.name][1]
        binding: Binding
        if iface.masquerade is not None:
            binding = "masquerade"
        elif iface.bridge is not None:
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
            vm_cidr=network.pod.vm_network_cidr or names.DEFAULT_VM_CIDR,
            vm_ipv6_cidr=network.pod.vm_ipv6_network_cidr or names.DEFAULT_VM_IPV6_CIDR,
            model=iface.model or "virtio",
        )
        if binding == "masquerade":
            for cidr, key in ((found.vm_cidr, "vmNetworkCIDR"), (found.vm_ipv6_cidr, "vmIPv6NetworkCIDR")):
                try:
                    names.gateway_and_vm_ip(cidr)
                except ValueError as err:
                    where = networks[iface.name][0]
                    raise NetworkConfigError(f"spec.networks[{where}].pod.{key}", str(err)) from None
    return found
