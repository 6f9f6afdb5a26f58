"""What the VM's DHCP server answers (DHCPv4 and DHCPv6 messages), the pod's DNS, KubeVirt's cache format."""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
import struct

import pytest

from kubevirt.network.dhcp import v4, v6
from kubevirt.network.dhcp.config import DHCPConfig
from kubevirt.network.dhcp.resolvconf import DNSSettings, parse_resolv_conf
from kubevirt.network.podnet import Route

MAC = "0a:58:0a:f4:00:05"
MASQ = DHCPConfig(
    name="eth0",
    ip=ipaddress.IPv4Interface("10.0.2.2/24"),
    mac=MAC,
    advertising_ip="10.0.2.1",
    gateway="10.0.2.1",
    mtu=1400,
)
DNS = DNSSettings(nameservers=("10.96.0.10",), search=("ns.svc.cluster.local", "cluster.local"))


def client_message(kind: int, *, mac: str = MAC, flags: int = 0, ciaddr: str = "0.0.0.0") -> bytes:
    chaddr = bytes.fromhex(mac.replace(":", "")).ljust(16, b"\x00")
    header = struct.pack(
        "!BBBB4sHH4s4s4s4s16s64s128s",
        1, 1, 6, 0, b"\x12\x34\x56\x78", 3, flags, socket.inet_aton(ciaddr),
        b"\x00" * 4, b"\x00" * 4, b"\x00" * 4, chaddr, b"", b"",
    )  # fmt: skip
    options = bytes([v4.OPT_MESSAGE_TYPE, 1, kind, 55, 2, 1, 3, v4.OPT_END])
    return header + v4.MAGIC_COOKIE + options


def answer(config: DHCPConfig, kind: int, hostname: str = "vm") -> tuple[bytes, dict[int, bytes]]:
    message = v4.parse(client_message(kind))
    reply_type = v4.answer_type(message)
    assert reply_type is not None
    reply = v4.build_reply(
        message,
        reply_type,
        server_ip=config.advertising_ip,
        client_ip=str(config.ip.ip) if config.ip else "",
        options=v4.server_options(config, DNS, hostname),
    )
    return reply, v4.parse_options(reply[240:])


def test_discover_gets_an_offer_of_the_vm_address_with_every_option() -> None:
    reply, options = answer(MASQ, v4.DISCOVER)
    assert reply[0] == v4.BOOTREPLY
    assert reply[4:8] == b"\x12\x34\x56\x78"  # the client's transaction
    assert socket.inet_ntoa(reply[16:20]) == "10.0.2.2"  # yiaddr
    assert reply[28:34] == bytes.fromhex(MAC.replace(":", ""))
    assert options[v4.OPT_MESSAGE_TYPE] == bytes([v4.OFFER])
    assert socket.inet_ntoa(options[v4.OPT_SERVER_ID]) == "10.0.2.1"
    assert options[v4.OPT_LEASE_TIME] == b"\xff\xff\xff\xff"  # never ends
    assert socket.inet_ntoa(options[v4.OPT_SUBNET_MASK]) == "255.255.255.0"
    assert socket.inet_ntoa(options[v4.OPT_ROUTER]) == "10.0.2.1"
    assert socket.inet_ntoa(options[v4.OPT_DNS]) == "10.96.0.10"
    assert options[v4.OPT_MTU] == struct.pack("!H", 1400)
    assert options[v4.OPT_HOSTNAME] == b"vm"
    assert options[v4.OPT_DOMAIN_NAME] == b"ns.svc.cluster.local"  # the longest search domain
    assert options[v4.OPT_DOMAIN_SEARCH] == b"\x02ns\x03svc\x07cluster\x05local\x00\x07cluster\x05local\x00"
    assert v4.OPT_CLASSLESS_ROUTES not in options  # masquerade: the router is the only way out


def test_request_gets_an_ack_and_other_messages_nothing() -> None:
    _reply, options = answer(MASQ, v4.REQUEST)
    assert options[v4.OPT_MESSAGE_TYPE] == bytes([v4.ACK])
    for kind in (v4.RELEASE, v4.DECLINE, v4.INFORM):
        assert v4.answer_type(v4.parse(client_message(kind))) is None


def test_reply_goes_by_broadcast_to_a_client_without_address() -> None:
    fresh = v4.parse(client_message(v4.DISCOVER))
    assert v4.reply_destination(fresh, "0.0.0.0") == "255.255.255.255"
    renewing = v4.parse(client_message(v4.REQUEST, ciaddr="10.0.2.2"))
    assert v4.reply_destination(renewing, "10.0.2.2") == "10.0.2.2"
    asks_broadcast = v4.parse(client_message(v4.REQUEST, flags=v4.BROADCAST_FLAG, ciaddr="10.0.2.2"))
    assert v4.reply_destination(asks_broadcast, "10.0.2.2") == "255.255.255.255"


def test_bridge_answer_carries_the_pod_routes_default_last() -> None:
    config = DHCPConfig(
        name="eth0",
        ip=ipaddress.IPv4Interface("10.244.0.5/24"),
        mac=MAC,
        advertising_ip="169.254.75.10",
        gateway="10.244.0.1",
        routes=(Route("0.0.0.0/0", "10.244.0.1"), Route("10.96.0.0/12", "10.244.0.254")),
        mtu=1450,
    )
    _reply, options = answer(config, v4.DISCOVER, hostname="bad_name!")
    assert v4.OPT_HOSTNAME not in options  # not a DNS label: left out
    assert socket.inet_ntoa(options[v4.OPT_SERVER_ID]) == "169.254.75.10"
    assert options[v4.OPT_CLASSLESS_ROUTES] == bytes(
        [12, 10, 96, 10, 244, 0, 254, 0, 10, 244, 0, 1]
    )  # RFC 3442: width, significant octets, gateway


@pytest.mark.parametrize(
    "data",
    [b"", b"\x02" + b"\x00" * 300, client_message(v4.DISCOVER)[:-2] + b"\x0c\x09ab"],
    ids=["empty", "a reply", "truncated option"],
)
def test_malformed_messages_are_refused(data: bytes) -> None:
    with pytest.raises(v4.MalformedMessageError):
        v4.parse(data)


def test_long_options_are_split_as_rfc_3396_says() -> None:
    many = DNSSettings(nameservers=tuple(f"10.0.{i // 250}.{i % 250 + 1}" for i in range(70)), search=())
    message = v4.parse(client_message(v4.DISCOVER))
    options = v4.server_options(MASQ, many, "vm")
    reply = v4.build_reply(message, v4.OFFER, server_ip="10.0.2.1", client_ip="10.0.2.2", options=options)
    assert len(v4.parse_options(reply[240:])[v4.OPT_DNS]) == 70 * 4


def test_no_ipv4_address_no_v4_options() -> None:
    with pytest.raises(ValueError, match="no IPv4 address"):
        v4.server_options(DHCPConfig(name="eth0", ipam_disabled=True), DNS, "vm")


def decode6(data: bytes) -> v6.ClientMessage:
    """A server's message read like a client's (the same layout)."""
    return dataclasses.replace(v6.parse(bytes([v6.SOLICIT]) + data[1:]), message_type=data[0])


def solicit(*extra: bytes) -> bytes:
    client_id = struct.pack("!HH", 3, 1) + bytes.fromhex(MAC.replace(":", ""))
    options = struct.pack("!HH", 1, len(client_id)) + client_id
    options += struct.pack("!HHIII", 3, 12, 7, 0, 0)  # IA_NA 7
    return bytes([v6.SOLICIT]) + b"\xaa\xbb\xcc" + options + b"".join(extra)


def test_dhcpv6_solicit_is_advertised_the_vm_address() -> None:
    reply = decode6(v6.build_reply(v6.parse(solicit()), client_ip="fd10:0:2::2", server_mac=MAC))
    assert reply.message_type == v6.ADVERTISE
    assert reply.transaction == b"\xaa\xbb\xcc"
    assert reply.options[v6.OPT_SERVER_ID] == v6.server_duid(MAC)
    assert reply.options[v6.OPT_CLIENT_ID] == v6.parse(solicit()).options[v6.OPT_CLIENT_ID]
    ia = reply.options[v6.OPT_IA_NA]
    assert ia[:4] == struct.pack("!I", 7)  # the client's IAID
    assert ipaddress.IPv6Address(ia[16:32]) == ipaddress.IPv6Address("fd10:0:2::2")


def test_dhcpv6_rapid_commit_and_requests_get_a_reply() -> None:
    rapid = v6.parse(solicit(struct.pack("!HH", v6.OPT_RAPID_COMMIT, 0)))
    assert decode6(v6.build_reply(rapid, client_ip="fd10:0:2::2", server_mac=MAC)).message_type == v6.REPLY
    request = v6.parse(bytes([v6.REQUEST]) + solicit()[1:])
    assert decode6(v6.build_reply(request, client_ip="fd10:0:2::2", server_mac=MAC)).message_type == v6.REPLY
    with pytest.raises(v6.MalformedMessageError):
        v6.parse(bytes([v6.ADVERTISE]) + solicit()[1:])  # a server's message


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
