"""KubeVirt's network admitter (``pkg/network/admitter``): interfaces, networks and their bindings."""

from __future__ import annotations

import re

from kubevirt.admission import causes as c
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.hardware import is_pci_address, parse_mac
from kubevirt.admission.json_fields import flag, has, integer, items, obj, text
from kubevirt.admission.k8s_names import port_name
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.view import JSON

_INTERFACE_NAME = re.compile(r"^[A-Za-z0-9-_]+$")
_MODELS = {"e1000", "e1000e", "ne2k_pci", "pcnet", "rtl8139", "virtio"}
# The MAC KubeVirt keeps for the in-pod bridge of masquerade interfaces.
RESERVED_BRIDGE_MAC = "02:00:00:00:00:00"
_BINDING_METHODS = ("bridge", "masquerade", "sriov", "passtBinding")


def _interfaces(spec: JSON) -> list[JSON]:
    return items(obj(obj(spec, "domain"), "devices"), "interfaces")


def _networks_by_name(spec: JSON) -> dict[str, JSON]:
    by_name: dict[str, JSON] = {}
    for network in items(spec, "networks"):
        by_name.setdefault(text(network, "name"), network)
    return by_name


def validate_creation(field: Path, spec: JSON) -> list[StatusCause]:
    """Rules only applied when an object is created: bindings KubeVirt no longer supports."""
    out: list[StatusCause] = []
    for i, iface in enumerate(_interfaces(spec)):
        where = field.child("domain", "devices", "interfaces").index(i)
        if has(iface, "slirp"):
            out.append(
                c.invalid(where.child("slirp"), "Slirp interface support has been discontinued since v1.3")
            )
        if has(iface, "passt"):
            out.append(
                c.invalid(where.child("passt"), "Passt network binding has been discontinued since v1.3")
            )
    return out


def validate_for_create(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    """The spec validator virt-api registers for VMI creation: creation rules, then all rules."""
    return validate_creation(field, spec) + validate(field, spec, config)


def _single_pod_network(field: Path, spec: JSON) -> list[StatusCause]:
    networks = items(spec, "networks")
    pods = [n for n in networks if has(n, "pod")]
    multus_defaults = [n for n in networks if flag(obj(n, "multus"), "default")]
    out: list[StatusCause] = []
    if len(pods) > 1:
        where = field.child("interfaces")
        out.append(c.duplicate(where, f"more than one interface is connected to a pod network in {where}"))
    if len(multus_defaults) > 1:
        out.append(c.invalid(field.child("networks"), "Multus CNI should only have one default network"))
    if pods and multus_defaults:
        out.append(
            c.invalid(
                field.child("networks"),
                "Pod network cannot be defined when Multus default network is defined",
            )
        )
    return out


def _network_sources(field: Path, spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    networks = items(spec, "networks")
    for i, network in enumerate(networks):
        pod, multus = has(network, "pod"), has(network, "multus")
        if not pod and not multus:
            out.append(c.required(field.child("networks").index(i), "should have a network type"))
        elif pod and multus:
            out.append(c.required(field.child("networks").index(i), "should have only one network type"))
    for i, network in enumerate(networks):
        if has(network, "multus") and not text(obj(network, "multus"), "networkName"):
            out.append(
                c.required(field.child("networks").index(i), "CNI delegating plugin must have a networkName")
            )
            break
    return out


def _default_network_name(spec: JSON) -> str | None:
    for network in items(spec, "networks"):
        if has(network, "pod") or flag(obj(network, "multus"), "default"):
            return text(network, "name")
    return None


def _interface_state(field: Path, spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    default_name = _default_network_name(spec)
    for i, iface in enumerate(_interfaces(spec)):
        where = field.child("domain", "devices", "interfaces").index(i).child("state")
        state, name = text(iface, "state"), text(iface, "name")
        if state not in ("", "absent", "up", "down"):
            out.append(c.invalid(where, f"logical {name} interface state value is unsupported: {state}"))
        if state == "absent" and not has(iface, "bridge"):
            out.append(
                c.invalid(
                    where, f'"{name}" interface\'s state "{state}" is supported only for bridge binding'
                )
            )
        if state == "absent" and default_name is not None and default_name == name:
            out.append(
                c.invalid(
                    where, f'"{name}" interface\'s state "{state}" is not supported on default networks'
                )
            )
    return out


def _bindings(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    out: list[StatusCause] = []
    networks = _networks_by_name(spec)
    for i, iface in enumerate(_interfaces(spec)):
        where = field.child("domain", "devices", "interfaces").index(i)
        name = text(iface, "name")
        network = networks.get(name, {})
        if has(iface, "binding") and any(has(iface, m) for m in _BINDING_METHODS):
            out.append(
                c.invalid(
                    where.child("binding"),
                    f"logical {name} interface cannot have both binding plugin and interface binding method",
                )
            )
        if has(iface, "masquerade") and not has(network, "pod"):
            out.append(
                c.invalid(where.child("name"), "Masquerade interface only implemented with pod network")
            )
        if has(iface, "masquerade") and text(iface, "macAddress") == RESERVED_BRIDGE_MAC:
            out.append(
                c.invalid(
                    where.child("macAddress"),
                    "The requested MAC address is reserved for the in-pod bridge. Please choose another one.",
                )
            )
        if has(iface, "bridge") and has(network, "pod") and not config.permit_bridge_interface_on_pod_network:
            out.append(
                c.invalid(
                    where.child("name"),
                    "Bridge on pod network configuration is not enabled under kubevirt-config",
                )
            )
    return out


def _names(field: Path, spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    seen: set[str] = set()
    for i, network in enumerate(items(spec, "networks")):
        name = text(network, "name")
        if name in seen:
            out.append(
                c.duplicate(
                    field.child("networks").index(i).child("name"),
                    f'Network with name "{name}" already exists, every network must have a unique name',
                )
            )
        seen.add(name)
    iface_names = {text(i, "name") for i in _interfaces(spec)}
    for i, network in enumerate(items(spec, "networks")):
        name = text(network, "name")
        if name not in iface_names:
            where = field.child("networks").index(i).child("name")
            out.append(c.required(where, f"{where} '{name}' not found."))
    seen = set()
    for i, iface in enumerate(_interfaces(spec)):
        name = text(iface, "name")
        if name in seen:
            out.append(
                c.duplicate(
                    field.child("domain", "devices", "interfaces").index(i).child("name"),
                    "Only one interface can be connected to one specific network",
                )
            )
        seen.add(name)
    network_names = {text(n, "name") for n in items(spec, "networks")}
    for i, iface in enumerate(_interfaces(spec)):
        name = text(iface, "name")
        if name not in network_names:
            where = field.child("domain", "devices", "interfaces").index(i).child("name")
            out.append(c.invalid(where, f"{where} '{name}' not found."))
    return out


def _ports(where: Path, ports: list[JSON]) -> list[StatusCause]:
    out: list[StatusCause] = []
    seen: set[str] = set()
    for j, port in enumerate(ports):
        name = text(port, "name")
        if not name:
            continue
        if name in seen:
            out.append(c.duplicate(where.index(j).child("name"), f"Duplicate name of the port: {name}"))
        if port_name(name):
            out.append(c.invalid(where.index(j).child("name"), f"Invalid name of the port: {name}"))
        seen.add(name)
    for j, port in enumerate(ports):
        number = integer(port, "port")
        if number == 0:
            out.append(c.required(where.index(j), "Port field is mandatory."))
        if number < 0 or number > 65536:
            out.append(c.invalid(where.index(j), "Port field must be in range 0 < x < 65536."))
        protocol = text(port, "protocol")
        if protocol and protocol not in ("TCP", "UDP"):
            out.append(
                c.invalid(where.index(j).child("protocol"), "Unknown protocol, only TCP or UDP allowed")
            )
    return out


def _interface_fields(field: Path, spec: JSON) -> list[StatusCause]:
    out: list[StatusCause] = []
    networks = _networks_by_name(spec)
    for i, iface in enumerate(_interfaces(spec)):
        where = field.child("domain", "devices", "interfaces").index(i)
        name_field = where.child("name")
        if not _INTERFACE_NAME.match(text(iface, "name")):
            out.append(
                c.invalid(
                    name_field,
                    "Network interface name can only contain alphabetical characters, numbers, dashes (-) or "
                    "underscores (_)",
                )
            )
        model = text(iface, "model")
        if model and model not in _MODELS:
            out.append(
                c.not_supported(
                    where.child("model"), f"interface {name_field} uses model {model} that is not supported."
                )
            )
        mac = text(iface, "macAddress")
        if mac:
            parsed = parse_mac(mac)
            if parsed is None:
                out.append(
                    c.invalid(
                        where.child("macAddress"),
                        f"interface {name_field} has malformed MAC address ({mac}).",
                    )
                )
            elif len(parsed) > 6:
                out.append(
                    c.invalid(
                        where.child("macAddress"),
                        f"interface {name_field} has MAC address ({mac}) that is too long.",
                    )
                )
        pci = text(iface, "pciAddress")
        if pci and not is_pci_address(pci):
            out.append(
                c.invalid(
                    where.child("pciAddress"), f"interface {name_field} has malformed PCI address ({pci})."
                )
            )
        network = networks.get(text(iface, "name"), {})
        if has(network, "pod") and iface.get("ports") is not None:
            out.extend(_ports(where.child("ports"), items(iface, "ports")))
    return out


def validate(field: Path, spec: JSON, config: ClusterConfig) -> list[StatusCause]:
    """``Validator.Validate``: every network rule, in KubeVirt's order."""
    out: list[StatusCause] = []
    out.extend(_single_pod_network(field, spec))
    out.extend(_network_sources(field, spec))
    out.extend(_interface_state(field, spec))
    out.extend(_bindings(field, spec, config))
    out.extend(_names(field, spec))
    out.extend(_interface_fields(field, spec))
    return out


def pod_network(spec: JSON) -> JSON | None:
    for network in items(spec, "networks"):
        if has(network, "pod"):
            return network
    return None
