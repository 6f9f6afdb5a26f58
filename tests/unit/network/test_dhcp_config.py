"""What the VM's DHCP server is told: dnsmasq's arguments, the pod's DNS, KubeVirt's cache format."""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest

from kubevirt.network.dhcp.config import DHCPConfig
from kubevirt.network.dhcp.dnsmasq import ServerSpec, dnsmasq_args
from kubevirt.network.dhcp.resolvconf import DNSSettings, parse_resolv_conf
from kubevirt.network.podnet import Route

MASQ = DHCPConfig(
    name="eth0",
    ip=ipaddress.IPv4Interface("10.0.2.2/24"),
    mac="0a:58:0a:f4:00:05",
    advertising_ip="10.0.2.1",
    gateway="10.0.2.1",
    mtu=1400,
)


def args(config: DHCPConfig, dns: DNSSettings | None = None, hostname: str = "vm") -> list[str]:
    dns = dns or DNSSettings(nameservers=("10.96.0.10",), search=("ns.svc.cluster.local", "cluster.local"))
    return dnsmasq_args(ServerSpec("k6t-eth0", config, dns, hostname, "/run/leases"))


def test_masquerade_server_knows_only_the_vm() -> None:
    given = args(MASQ)
    assert "--interface=k6t-eth0" in given
    assert "--port=0" in given  # DHCP only: no DNS server in the pod
    assert "--dhcp-host=0a:58:0a:f4:00:05,set:vm,10.0.2.2,vm,infinite" in given
    assert not any(":0:2::" in a for a in given)  # no IPv6 in the pod, none for the VM
    assert "--dhcp-ignore=tag:!known" in given
    assert "--dhcp-range=tag:vm,10.0.2.2,static,255.255.255.0,infinite" in given
    assert "--dhcp-option=tag:vm,option:router,10.0.2.1" in given
    assert "--dhcp-option=tag:vm,option:dns-server,10.96.0.10" in given
    assert "--dhcp-option-force=tag:vm,option:domain-search,ns.svc.cluster.local,cluster.local" in given
    assert "--dhcp-option-force=tag:vm,option:mtu,1400" in given
    assert not any(a.startswith("--shared-network") for a in given)


def test_bridge_server_shares_the_pod_subnet_and_its_routes() -> None:
    config = DHCPConfig(
        name="eth0",
        ip=ipaddress.IPv4Interface("10.244.0.5/24"),
        mac="0a:58:0a:f4:00:05",
        advertising_ip="169.254.75.10",
        gateway="10.244.0.1",
        routes=(Route("0.0.0.0/0", "10.244.0.1"), Route("10.96.0.0/12", "10.244.0.254")),
        mtu=1450,
    )
    given = args(config, hostname="bad_name!")
    assert "--shared-network=k6t-eth0,10.244.0.5" in given
    assert "--dhcp-host=0a:58:0a:f4:00:05,set:vm,10.244.0.5,infinite" in given  # no invalid hostname
    assert (
        "--dhcp-option-force=tag:vm,option:classless-static-route,0.0.0.0/0,10.244.0.1,10.96.0.0/12,10.244.0.254"
        in given
    )


def test_dual_stack_masquerade_serves_dhcpv6_too() -> None:
    given = args(dataclasses.replace(MASQ, ipv6=ipaddress.IPv6Interface("fd10:0:2::2/120")))
    assert "--dhcp-host=0a:58:0a:f4:00:05,set:vm,10.0.2.2,[fd10:0:2::2],vm,infinite" in given
    assert "--dhcp-range=tag:vm,fd10:0:2::2,static,120,infinite" in given
    assert "--dhcp-range=tag:vm,10.0.2.2,static,255.255.255.0,infinite" in given


def test_no_address_no_server() -> None:
    with pytest.raises(ValueError, match="no address to hand out"):
        args(DHCPConfig(name="eth0", ipam_disabled=True))


def test_resolv_conf() -> None:
    parsed = parse_resolv_conf(
        "# generated\nnameserver 10.96.0.10\nnameserver fd00::10\nnameserver bogus\n"
        "search a.svc.cluster.local svc.cluster.local cluster.local. bad,option:x\noptions ndots:5\n"
        "nameserver 10.96.0.10\n"
    )
    assert parsed.nameservers == ("10.96.0.10",)
    assert parsed.search == ("a.svc.cluster.local", "svc.cluster.local", "cluster.local")


def test_cache_json_round_trip_in_kubevirt_layout() -> None:
    config = DHCPConfig(
        name="eth0",
        ip=ipaddress.IPv4Interface("10.244.0.5/24"),
        mac="0a:58:0a:f4:00:05",
        gateway="10.244.0.1",
        routes=(Route("0.0.0.0/0", "10.244.0.1"),),
        mtu=1450,
    )
    encoded = config.to_json()
    assert b'"Mask": "////AA=="' in encoded  # Go's encoding of a net.IPMask
    assert b'"MAC": "ClgK9AAF"' in encoded  # and of a net.HardwareAddr
    assert DHCPConfig.from_json(encoded) == config
