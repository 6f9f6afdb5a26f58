"""The masquerade binding in real network namespaces: phase 1 (bridge, tap, nftables), phase 2 (the DHCP
server), a real DHCP client behind the bridge, and TCP through the NAT both ways."""

from __future__ import annotations

import re
import socket
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyroute2 import IPRoute
from pyroute2.netlink.rtnl.ifaddrmsg import IFA_F_NODAD

from kubevirt.network.errors import NetworkError, PodNetworkError
from kubevirt.network.launcher import LauncherNetwork
from kubevirt.network.nft.libnft import Nft
from kubevirt.network.podnet import read_sysctl, write_sysctl
from kubevirt.network.setup.pod import PodNetworkSetup
from kubevirt.podroot import PodRoot
from kubevirt_testing.pod_netns import CLIENT_IP, POD_IP, POD_MTU, Listener, Topology, connect, guest_address

pytestmark = pytest.mark.timeout(120)


def masquerade_vmi(ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    iface: dict[str, Any] = {"name": "default", "masquerade": {}}
    if ports is not None:
        iface["ports"] = ports
    return {
        "metadata": {"name": "testvmi", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {
            "domain": {"devices": {"interfaces": [iface]}},
            "networks": [{"name": "default", "pod": {}}],
        },
        "status": {"phase": "Scheduled", "runtimeUser": 0, "migrationTransport": "Unix"},
    }


def rules(topology: Topology, command: str) -> str:
    """nft's listing, counters left out (the kernel's own traffic moves them)."""
    listing = topology.run(topology.pod, lambda: Nft().run(command))
    return re.sub(r"counter packets \d+ bytes \d+", "counter", listing)


def links_in(topology: Topology, ns: str) -> dict[str, dict[str, Any]]:
    def read() -> dict[str, dict[str, Any]]:
        with IPRoute() as ipr:
            found = {}
            for link in ipr.get_links():
                found[link.get_attr("IFLA_IFNAME")] = {
                    "mtu": link.get_attr("IFLA_MTU"),
                    "mac": link.get_attr("IFLA_ADDRESS"),
                    "master": link.get_attr("IFLA_MASTER"),
                    "index": link["index"],
                    "addresses": [  # IPv4: the kernel adds IPv6 link-local ones of its own
                        f"{a.get_attr('IFA_ADDRESS')}/{a['prefixlen']}"
                        for a in ipr.get_addr(index=link["index"], family=2)
                    ],
                }
            return found

    return topology.run(ns, read)


def test_masquerade_dhcp_and_nat(topology: Topology, tmp_path: Path, resolv_conf: Path) -> None:
    vmi = masquerade_vmi()
    setup = PodNetworkSetup(private_dir=tmp_path / "handler")
    result = setup.setup(vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path))
    assert result is not None
    print(f"phase 1: {result.seconds * 1000:.1f} ms")
    assert setup.setup(vmi, 0, netns=topology.path(topology.pod)) is None  # done once per VMI

    links = links_in(topology, topology.pod)
    bridge, tap = links["k6t-eth0"], links["tap0"]
    assert bridge["addresses"] == ["10.0.2.1/24"]
    assert bridge["mac"] == "02:00:00:00:00:00"
    assert bridge["mtu"] == tap["mtu"] == POD_MTU
    assert tap["master"] == bridge["index"]
    assert links["eth0"]["addresses"] == [f"{POD_IP}/24"]  # the pod keeps its address
    assert topology.run(topology.pod, lambda: read_sysctl("net.ipv4.ip_forward")) == "1"
    ruleset = rules(topology, "list table ip nat")
    for expected in (
        "ip saddr 10.0.2.2 counter masquerade",
        'iifname "eth0" counter jump KUBEVIRT_PREINBOUND',
        'oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND',
        "counter dnat to 10.0.2.2",
        "ip saddr 127.0.0.1 counter snat to 10.0.2.1",
    ):
        assert expected in ruleset
    cached = setup.cache.read(vmi["metadata"]["uid"], "default")
    assert cached is not None
    assert cached.pod_ip == POD_IP
    assert cached.pod_ips == (POD_IP,)

    launcher = LauncherNetwork(root=PodRoot(tmp_path), resolv_conf=resolv_conf)
    try:
        taps = topology.run(topology.pod, lambda: launcher.prepare(vmi))
        assert len(taps) == 1
        tap_iface = taps[0]
        assert (tap_iface.target, tap_iface.mtu) == ("tap0", POD_MTU)
        assert tap_iface.mac == links["eth0"]["mac"]  # the VM takes the pod interface's MAC

        topology.attach_guest("k6t-eth0", tap_iface.mac)
        lease = topology.udhcpc()
        assert lease["ip"] == "10.0.2.2"
        assert lease["subnet"] == "255.255.255.0"
        assert lease["router"] == "10.0.2.1"
        assert lease["dns"].split() == ["10.96.0.10"]
        assert lease["search"].split() == ["default.svc.cluster.local", "svc.cluster.local", "cluster.local"]
        assert lease["mtu"] == str(POD_MTU)
        assert lease["hostname"] == "testvmi"
        assert lease["serverid"] == "10.0.2.1"
    finally:
        launcher.stop()

    guest_address(topology, "10.0.2.2/24", "10.0.2.1")
    inbound = Listener(topology, topology.guest, 80)
    outbound = Listener(topology, topology.client, 9000)
    try:
        # The cluster reaches the VM at the pod's IP, and the VM sees who called.
        assert connect(topology, topology.client, POD_IP, 80) == b"ok"
        assert inbound.peers == [CLIENT_IP]
        # So does the pod itself through its loopback, seen from the VM as the gateway.
        assert connect(topology, topology.pod, "127.0.0.1", 80) == b"ok"
        assert inbound.peers[-1] == "10.0.2.1"
        # The VM reaches the cluster as the pod.
        assert connect(topology, topology.guest, CLIENT_IP, 9000) == b"ok"
        assert outbound.peers == [POD_IP]
    finally:
        inbound.close()
        outbound.close()


def test_ports_limit_what_is_forwarded(topology: Topology, tmp_path: Path) -> None:
    vmi = masquerade_vmi(ports=[{"name": "http", "port": 80}])
    setup = PodNetworkSetup(private_dir=tmp_path / "handler")
    setup.setup(vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path))
    mac = links_in(topology, topology.pod)["eth0"]["mac"]
    topology.attach_guest("k6t-eth0", mac)
    guest_address(topology, "10.0.2.2/24", "10.0.2.1")
    http, other = Listener(topology, topology.guest, 80), Listener(topology, topology.guest, 8080)
    try:
        assert connect(topology, topology.client, POD_IP, 80) == b"ok"
        with pytest.raises(ConnectionRefusedError):  # 8080 stays with the pod, where nothing listens
            connect(topology, topology.client, POD_IP, 8080)
        assert other.peers == []
    finally:
        http.close()
        other.close()


def test_a_multiqueue_vmi_gets_a_multi_queue_tap(topology: Topology, tmp_path: Path) -> None:
    # libvirt opens the tap with one queue per vCPU; a tap made single-queue refuses that (EINVAL).
    vmi = masquerade_vmi()
    vmi["spec"]["domain"]["devices"]["networkInterfaceMultiqueue"] = True
    vmi["spec"]["domain"]["cpu"] = {"sockets": 1, "cores": 2, "threads": 1}
    PodNetworkSetup(private_dir=tmp_path).setup(
        vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)
    )
    assert "multi_queue" in topology.run(topology.pod, lambda: _tap_details("tap0"))


def test_a_single_queue_vmi_gets_a_single_queue_tap(topology: Topology, tmp_path: Path) -> None:
    PodNetworkSetup(private_dir=tmp_path).setup(
        masquerade_vmi(), 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)
    )
    assert "multi_queue" not in topology.run(topology.pod, lambda: _tap_details("tap0"))


def _tap_details(name: str) -> str:
    return subprocess.run(
        ["ip", "-d", "link", "show", name], capture_output=True, text=True, check=True
    ).stdout


def test_legacy_migration_ports_stay_with_the_pod(topology: Topology, tmp_path: Path) -> None:
    vmi = masquerade_vmi()
    vmi["status"].pop("migrationTransport")
    PodNetworkSetup(private_dir=tmp_path).setup(
        vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)
    )
    ruleset = rules(topology, "list chain ip nat KUBEVIRT_POSTINBOUND")
    assert "tcp dport { 49152, 49153 } ip saddr 127.0.0.1 counter return" in ruleset


def test_failure_leaves_nothing_configured(topology: Topology, tmp_path: Path) -> None:
    def squat_tap() -> None:
        with IPRoute() as ipr:
            ipr.link("add", ifname="tap0", kind="bridge")

    topology.run(topology.pod, squat_tap)
    before = links_in(topology, topology.pod)
    topology.run(
        topology.pod, lambda: write_sysctl("net.ipv4.ip_forward", "0")
    )  # a new netns inherits the node's
    setup = PodNetworkSetup(private_dir=tmp_path)
    vmi = masquerade_vmi()
    with pytest.raises(NetworkError, match="creating tap tap0"):
        setup.setup(vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path))
    assert set(links_in(topology, topology.pod)) == set(before)
    assert topology.run(topology.pod, lambda: read_sysctl("net.ipv4.ip_forward")) == "0"
    assert topology.run(topology.pod, lambda: Nft().run("list tables")).strip() == ""
    assert setup.cache.read(vmi["metadata"]["uid"], "default") is None


def test_absent_pod_interface(topology: Topology, tmp_path: Path) -> None:
    def remove_eth0() -> None:
        with IPRoute() as ipr:
            ipr.link("del", index=ipr.link_lookup(ifname="eth0")[0])

    topology.run(topology.pod, remove_eth0)
    with pytest.raises(PodNetworkError, match=r"pod link \(eth0\) is missing"):
        PodNetworkSetup(private_dir=tmp_path).setup(
            masquerade_vmi(), 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)
        )


def test_ipv6_when_the_pod_has_it(topology: Topology, tmp_path: Path, resolv_conf: Path) -> None:
    def add_ipv6() -> None:
        with IPRoute() as ipr:
            ipr.addr("add", index=ipr.link_lookup(ifname="eth0")[0], address="fd00:10:244::2", prefixlen=64)

    topology.run(topology.pod, add_ipv6)
    vmi = masquerade_vmi()
    PodNetworkSetup(private_dir=tmp_path).setup(
        vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)
    )

    def bridge_ipv6() -> list[str]:
        with IPRoute() as ipr:
            index = ipr.link_lookup(ifname="k6t-eth0")[0]
            return [
                f"{a.get_attr('IFA_ADDRESS')}/{a['prefixlen']}" for a in ipr.get_addr(index=index, family=10)
            ]

    assert "fd10:0:2::1/120" in topology.run(topology.pod, bridge_ipv6)
    assert topology.run(topology.pod, lambda: read_sysctl("net.ipv6.conf.all.forwarding")) == "1"
    ruleset = rules(topology, "list table ip6 nat")
    assert "ip6 saddr fd10:0:2::2 counter masquerade" in ruleset
    assert "counter dnat to fd10:0:2::2" in ruleset

    launcher = LauncherNetwork(root=PodRoot(tmp_path), resolv_conf=resolv_conf)
    try:
        (tap,) = topology.run(topology.pod, lambda: launcher.prepare(vmi))
        topology.attach_guest("k6t-eth0", tap.mac)
        assert topology.dhcpv6_solicit(tap.mac) == ["fd10:0:2::2"]  # DHCPv6, beside DHCPv4
        assert topology.udhcpc()["ip"] == "10.0.2.2"
    finally:
        launcher.stop()


POD_IP6, CLIENT_IP6 = "fd00:10:244::2", "fd00:10:244::1"


def _add_ipv6(address: str, prefixlen: int, gateway: str | None = None) -> None:
    with IPRoute() as ipr:
        index = ipr.link_lookup(ifname="eth0")[0]
        # Without duplicate address detection the address is usable at once rather than tentative.
        ipr.addr("add", index=index, address=address, prefixlen=prefixlen, flags=IFA_F_NODAD)
        if gateway:
            ipr.route("add", dst="::/0", gateway=gateway, family=socket.AF_INET6)


def test_dual_stack_ports_forwarded_on_both_families(topology: Topology, tmp_path: Path) -> None:
    topology.run(topology.client, lambda: _add_ipv6(CLIENT_IP6, 64))
    topology.run(topology.pod, lambda: _add_ipv6(POD_IP6, 64))
    vmi = masquerade_vmi(ports=[{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}])
    # Each family's ruleset goes through libnftables here; one it refuses fails the setup.
    PodNetworkSetup(private_dir=tmp_path).setup(
        vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)
    )
    ruleset6 = rules(topology, "list table ip6 nat")
    # The ::1 rules are KubeVirt's too; Linux does not route ::1 off the loopback (IPv6 has no
    # route_localnet), so only their text is checked, not traffic through them.
    for expected in (
        "tcp dport 80 counter dnat to fd10:0:2::2",
        "tcp dport 80 ip6 saddr ::1 counter snat to fd10:0:2::1",
        "ip6 daddr ::1 tcp dport 80 counter dnat to fd10:0:2::2",
        "udp dport 53 counter dnat to fd10:0:2::2",
        "ip6 daddr ::1 udp dport 53 counter dnat to fd10:0:2::2",
    ):
        assert expected in ruleset6
    assert "ip daddr 127.0.0.1 tcp dport 80 counter dnat to 10.0.2.2" in rules(topology, "list table ip nat")

    mac = links_in(topology, topology.pod)["eth0"]["mac"]
    topology.attach_guest("k6t-eth0", mac)
    guest_address(topology, "10.0.2.2/24", "10.0.2.1")
    topology.run(topology.guest, lambda: _add_ipv6("fd10:0:2::2", 120, gateway="fd10:0:2::1"))
    http4 = Listener(topology, topology.guest, 80)
    http6, other6 = (Listener(topology, topology.guest, port, ipv6=True) for port in (80, 8080))
    try:
        # The cluster reaches the listed port at the pod's IPv6 address, and the VM sees who called.
        assert connect(topology, topology.client, POD_IP6, 80) == b"ok"
        assert http6.peers == [CLIENT_IP6]
        with pytest.raises(ConnectionRefusedError):  # an unlisted port stays with the pod
            connect(topology, topology.client, POD_IP6, 8080)
        assert other6.peers == []
        assert connect(topology, topology.client, POD_IP, 80) == b"ok"  # IPv4 alongside
        assert http4.peers == [CLIENT_IP]
    finally:
        for listener in (http4, http6, other6):
            listener.close()
