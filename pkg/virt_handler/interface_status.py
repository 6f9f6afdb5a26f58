"""``status.interfaces`` as KubeVirt's virt-handler builds it from the domain: one entry per NIC of the
domain (name, MAC, queue count, link state; ``infoSource: domain``), the pod's addresses added by the
network setup, then what the guest agent reports merged in by MAC (the guest's interface name; its
addresses where the status has none of that family, or in place of them when the agent reports none;
``infoSource: domain, guest-agent``), and the guest's interfaces the domain does not have appended
(``infoSource: guest-agent``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kubevirt_api.view import JSON

INFO_SOURCE_DOMAIN = "domain"
INFO_SOURCE_GUEST_AGENT = "guest-agent"
INFO_SOURCE_DOMAIN_AND_GUEST_AGENT = "domain, guest-agent"
DEFAULT_QUEUE_COUNT = 1


def domain_interfaces(domain: JSON) -> list[JSON]:
    """The entries of the domain's NICs (the VMI's interface names are their aliases less ``ua-``)."""
    found = []
    for nic in ((domain.get("Spec") or {}).get("Devices") or {}).get("Interfaces") or []:
        alias = ((nic.get("Alias") or {}).get("Name")) or ""
        queues = (nic.get("Driver") or {}).get("Queues")
        found.append(
            {
                "name": alias.removeprefix("ua-"),
                "mac": (nic.get("MAC") or {}).get("MAC") or "",
                "infoSource": INFO_SOURCE_DOMAIN,
                "queueCount": int(queues) if queues else DEFAULT_QUEUE_COUNT,
                "linkState": (nic.get("LinkState") or {}).get("State") or "up",
            }
        )
    return found


def _family_split(addresses: list[str]) -> tuple[list[str], list[str]]:
    v4: list[str] = []
    v6: list[str] = []
    for address in addresses:
        try:
            (v6 if ipaddress.ip_address(address).version == 6 else v4).append(address)
        except ValueError:
            v4.append(address)  # as Go's family check: what is not IPv6 counts as IPv4
    return v4, v6


def _routable(addresses: list[str]) -> list[str]:
    """Without the guest's link-local addresses (unreachable through masquerade's NAT)."""
    kept = []
    for address in addresses:
        try:
            if ipaddress.ip_address(address).is_link_local:
                continue
        except ValueError:
            continue
        kept.append(address)
    return kept


def _merge_addresses(entry: JSON, reported: list[str]) -> None:
    current_v4, current_v6 = _family_split(list(entry.get("ipAddresses") or []))
    agent_v4, agent_v6 = _family_split(reported)
    v4 = agent_v4 if not current_v4 or not agent_v4 else current_v4
    v6 = agent_v6 if not current_v6 or not agent_v6 else current_v6
    merged = [*v4, *v6]
    entry.pop("ipAddress", None)
    entry.pop("ipAddresses", None)
    if merged:
        entry["ipAddress"] = merged[0]
        entry["ipAddresses"] = merged


def merge_guest_agent(entries: list[JSON], domain: JSON, vmi: Mapping[str, Any]) -> list[JSON]:
    """``entries`` with the guest agent's interfaces (the domain status's ``Interfaces``) merged in."""
    devices = ((vmi.get("spec") or {}).get("domain") or {}).get("devices") or {}
    spec_interfaces = {str(i.get("name") or ""): i for i in devices.get("interfaces") or []}
    merged = list(entries)
    for reported in (domain.get("Status") or {}).get("Interfaces") or []:
        mac = str(reported.get("Mac") or "")
        addresses = [str(a) for a in reported.get("IPs") or []]
        name = str(reported.get("InterfaceName") or "")
        entry = next((e for e in merged if e.get("mac") and e.get("mac") == mac), None)
        if entry is None:
            added: JSON = {"mac": mac, "infoSource": INFO_SOURCE_GUEST_AGENT}
            if reported.get("Ip"):
                added["ipAddress"] = str(reported["Ip"])
            if addresses:
                added["ipAddresses"] = addresses
            if name:
                added["interfaceName"] = name
            merged.append(added)
            continue
        if (spec_interfaces.get(str(entry.get("name") or "")) or {}).get("masquerade") is not None:
            addresses = _routable(addresses)
        if name:
            entry["interfaceName"] = name
        else:
            entry.pop("interfaceName", None)
        _merge_addresses(entry, addresses)
        if name:  # an older launcher's merged entries carry no guest name: not the agent's
            entry["infoSource"] = INFO_SOURCE_DOMAIN_AND_GUEST_AGENT
    return merged
