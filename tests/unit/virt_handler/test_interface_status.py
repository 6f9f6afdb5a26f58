"""``status.interfaces`` from the domain and the guest agent, by KubeVirt's merge rules."""

from __future__ import annotations

from typing import Any

from kubevirt.virt_handler.interface_status import domain_interfaces, merge_guest_agent

JSON = dict[str, Any]
MAC = "52:54:00:00:00:01"


def _domain(agent: list[JSON] | None = None, **nic: Any) -> JSON:
    interface = {"Alias": {"Name": "ua-default"}, "MAC": {"MAC": MAC}, **nic}
    return {"Spec": {"Devices": {"Interfaces": [interface]}}, "Status": {"Interfaces": agent}}


def _vmi(binding: str = "masquerade") -> JSON:
    return {"spec": {"domain": {"devices": {"interfaces": [{"name": "default", binding: {}}]}}}}


def test_each_nic_of_the_domain_with_its_queues_and_link_state() -> None:
    assert domain_interfaces(_domain()) == [
        {"name": "default", "mac": MAC, "infoSource": "domain", "queueCount": 1, "linkState": "up"}
    ]
    (entry,) = domain_interfaces(_domain(Driver={"Queues": 4}, LinkState={"State": "down"}))
    assert (entry["queueCount"], entry["linkState"]) == (4, "down")


def test_the_agent_names_the_guest_interface_and_keeps_the_pod_address_of_a_family_it_also_reports() -> None:
    agent = [
        {"Mac": MAC, "Ip": "10.0.2.2", "IPs": ["10.0.2.2", "fe80::1", "fd10::2"], "InterfaceName": "eth0"}
    ]
    domain = _domain(agent)
    entries = domain_interfaces(domain)
    entries[0].update(ipAddress="10.244.0.7", ipAddresses=["10.244.0.7"], podInterfaceName="eth0")
    (merged,) = merge_guest_agent(entries, domain, _vmi())
    assert merged["interfaceName"] == "eth0"
    assert merged["infoSource"] == "domain, guest-agent"
    # IPv4: the pod's stays; IPv6: the guest's, less its link-local address (masquerade cannot reach it).
    assert merged["ipAddresses"] == ["10.244.0.7", "fd10::2"]
    assert merged["ipAddress"] == "10.244.0.7"


def test_a_bridged_interface_keeps_link_local_addresses_and_takes_the_guests_when_it_had_none() -> None:
    agent = [{"Mac": MAC, "Ip": "192.168.1.5", "IPs": ["192.168.1.5", "fe80::1"], "InterfaceName": "eth0"}]
    domain = _domain(agent)
    (merged,) = merge_guest_agent(domain_interfaces(domain), domain, _vmi("bridge"))
    assert merged["ipAddresses"] == ["192.168.1.5", "fe80::1"]


def test_an_agent_reporting_no_address_clears_them() -> None:
    domain = _domain([{"Mac": MAC, "IPs": [], "InterfaceName": "eth0"}])
    entries = domain_interfaces(domain)
    entries[0].update(ipAddress="10.244.0.7", ipAddresses=["10.244.0.7"])
    (merged,) = merge_guest_agent(entries, domain, _vmi())
    assert "ipAddress" not in merged
    assert "ipAddresses" not in merged


def test_a_guest_interface_the_domain_lacks_is_added_from_the_agent() -> None:
    agent = [{"Mac": "02:00:00:00:00:09", "Ip": "10.1.1.1", "IPs": ["10.1.1.1"], "InterfaceName": "dummy0"}]
    domain = _domain(agent)
    _, added = merge_guest_agent(domain_interfaces(domain), domain, _vmi())
    assert added == {
        "mac": "02:00:00:00:00:09",
        "ipAddress": "10.1.1.1",
        "ipAddresses": ["10.1.1.1"],
        "interfaceName": "dummy0",
        "infoSource": "guest-agent",
    }


def test_an_older_launchers_merged_entry_is_not_counted_as_the_agents() -> None:
    domain = _domain([{"Mac": MAC, "Ip": "10.0.2.2", "IPs": ["10.0.2.2"], "InterfaceName": ""}])
    (merged,) = merge_guest_agent(domain_interfaces(domain), domain, _vmi())
    assert merged["infoSource"] == "domain"
    assert merged["ipAddresses"] == ["10.0.2.2"]
