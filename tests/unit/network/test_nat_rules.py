"""The masquerade binding's nftables commands, word for word as KubeVirt's masquerade.go runs them."""

from __future__ import annotations

from kubevirt.network.nft.masquerade import FamilyAddresses, nat_commands
from kubevirt.network.plan import ForwardedPort

V4 = FamilyAddresses("ip", "10.0.2.1", "10.0.2.2")
V6 = FamilyAddresses("ip6", "fd10:0:2::1", "fd10:0:2::2")
HEAD = [
    "add table ip nat",
    "add chain ip nat prerouting { type nat hook prerouting priority -100; }",
    "add chain ip nat input { type nat hook input priority 100; }",
    "add chain ip nat output { type nat hook output priority -100; }",
    "add chain ip nat postrouting { type nat hook postrouting priority 100; }",
    "add chain ip nat KUBEVIRT_PREINBOUND",
    "add chain ip nat KUBEVIRT_POSTINBOUND",
    "add rule ip nat postrouting ip saddr 10.0.2.2 counter masquerade",
    "add rule ip nat prerouting iifname eth0 counter jump KUBEVIRT_PREINBOUND",
    "add rule ip nat postrouting oifname k6t-eth0 counter jump KUBEVIRT_POSTINBOUND",
]


def test_every_port_forwarded_without_ports() -> None:
    assert nat_commands(V4, pod_iface="eth0", bridge="k6t-eth0", ports=[]) == [
        *HEAD,
        "add rule ip nat KUBEVIRT_PREINBOUND counter dnat to 10.0.2.2",
        "add rule ip nat KUBEVIRT_POSTINBOUND ip saddr { 127.0.0.1 } counter snat to 10.0.2.1",
        "add rule ip nat output ip daddr { 127.0.0.1 } counter dnat to 10.0.2.2",
    ]


def test_only_listed_ports_forwarded() -> None:
    ports = [ForwardedPort(80, "tcp"), ForwardedPort(53, "udp")]
    assert nat_commands(V4, pod_iface="eth0", bridge="k6t-eth0", ports=ports)[len(HEAD) :] == [
        "add rule ip nat KUBEVIRT_PREINBOUND tcp dport { 80 } counter dnat to 10.0.2.2",
        "add rule ip nat KUBEVIRT_POSTINBOUND tcp dport 80 ip saddr { 127.0.0.1 } counter snat to 10.0.2.1",
        "add rule ip nat output ip daddr { 127.0.0.1 } tcp dport 80 counter dnat to 10.0.2.2",
        "add rule ip nat KUBEVIRT_PREINBOUND udp dport { 53 } counter dnat to 10.0.2.2",
        "add rule ip nat KUBEVIRT_POSTINBOUND udp dport 53 ip saddr { 127.0.0.1 } counter snat to 10.0.2.1",
        "add rule ip nat output ip daddr { 127.0.0.1 } udp dport 53 counter dnat to 10.0.2.2",
    ]


def test_reserved_ports_return_before_any_nat() -> None:
    commands = nat_commands(V4, pod_iface="eth0", bridge="k6t-eth0", ports=[], reserved_ports=(49152, 49153))
    assert commands[len(HEAD) : len(HEAD) + 2] == [
        "add rule ip nat output tcp dport { 49152, 49153 } ip saddr 127.0.0.1 counter return",
        "add rule ip nat KUBEVIRT_POSTINBOUND tcp dport { 49152, 49153 } ip saddr 127.0.0.1 counter return",
    ]


def test_ipv6_family() -> None:
    commands = nat_commands(V6, pod_iface="eth0", bridge="k6t-eth0", ports=[])
    assert commands[0] == "add table ip6 nat"
    assert "add rule ip6 nat postrouting ip6 saddr fd10:0:2::2 counter masquerade" in commands
    assert "add rule ip6 nat KUBEVIRT_POSTINBOUND ip6 saddr { ::1 } counter snat to fd10:0:2::1" in commands
    assert commands[-1] == "add rule ip6 nat output ip6 daddr { ::1 } counter dnat to fd10:0:2::2"


def test_ipv6_listed_ports_match_ipv6_addresses() -> None:
    ports = [ForwardedPort(80, "tcp"), ForwardedPort(53, "udp")]
    assert nat_commands(V6, pod_iface="eth0", bridge="k6t-eth0", ports=ports)[len(HEAD) :] == [
        "add rule ip6 nat KUBEVIRT_PREINBOUND tcp dport { 80 } counter dnat to fd10:0:2::2",
        "add rule ip6 nat KUBEVIRT_POSTINBOUND tcp dport 80 ip6 saddr { ::1 } counter snat to fd10:0:2::1",
        "add rule ip6 nat output ip6 daddr { ::1 } tcp dport 80 counter dnat to fd10:0:2::2",
        "add rule ip6 nat KUBEVIRT_PREINBOUND udp dport { 53 } counter dnat to fd10:0:2::2",
        "add rule ip6 nat KUBEVIRT_POSTINBOUND udp dport 53 ip6 saddr { ::1 } counter snat to fd10:0:2::1",
        "add rule ip6 nat output ip6 daddr { ::1 } udp dport 53 counter dnat to fd10:0:2::2",
    ]


def test_ipv6_reserved_ports_match_ipv6_loopback() -> None:
    commands = nat_commands(V6, pod_iface="eth0", bridge="k6t-eth0", ports=[], reserved_ports=(49152, 49153))
    assert commands[len(HEAD) : len(HEAD) + 2] == [
        "add rule ip6 nat output tcp dport { 49152, 49153 } ip6 saddr ::1 counter return",
        "add rule ip6 nat KUBEVIRT_POSTINBOUND tcp dport { 49152, 49153 } ip6 saddr ::1 counter return",
    ]
