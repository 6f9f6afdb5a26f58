"""The bridge binding in real network namespaces: the pod's address and MAC move to the VM, which gets
them by DHCP from the launcher's server answering on the bridge, and reaches the cluster directly."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pyroute2 import IPRoute

from kubevirt.network.cache import read_dhcp_cache
from kubevirt.network.errors import NetworkError
from kubevirt.network.launcher import LauncherNetwork
from kubevirt.network.setup.pod import PodNetworkSetup
from kubevirt.podroot import PodRoot
from kubevirt_testing.pod_netns import CLIENT_IP, POD_IP, POD_MTU, Listener, Topology, connect, guest_address

pytestmark = pytest.mark.timeout(120)


def bridge_vmi() -> dict[str, Any]:
    return {
        "metadata": {"name": "bridged", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {
            "hostname": "myguest",
            "domain": {"devices": {"interfaces": [{"name": "default", "bridge": {}}]}},
            "networks": [{"name": "default", "pod": {}}],
        },
        "status": {"phase": "Scheduled", "runtimeUser": 0, "migrationTransport": "Unix"},
    }


def pod_links(topology: Topology) -> dict[str, dict[str, Any]]:
    def read() -> dict[str, dict[str, Any]]:
        with IPRoute() as ipr:
            return {
                link.get_attr("IFLA_IFNAME"): {
                    "mac": link.get_attr("IFLA_ADDRESS"),
                    "master": link.get_attr("IFLA_MASTER"),
                    "index": link["index"],
                    "ipv4": [a.get_attr("IFA_ADDRESS") for a in ipr.get_addr(index=link["index"], family=2)],
                }
                for link in ipr.get_links()
            }

    return topology.run(topology.pod, read)


def test_bridge_binding_hands_the_pod_ip_to_the_vm(
    topology: Topology, tmp_path: Path, resolv_conf: Path
) -> None:
    original_mac = pod_links(topology)["eth0"]["mac"]
    vmi = bridge_vmi()
    setup = PodNetworkSetup(private_dir=tmp_path / "handler")
    assert setup.setup(vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)) is not None

    links = pod_links(topology)
    bridge = links["k6t-eth0"]
    assert bridge["ipv4"] == ["169.254.75.10"]
    assert links["eth0-nic"]["master"] == bridge["index"] == links["tap0"]["master"]
    assert links["eth0-nic"]["ipv4"] == []
    assert links["eth0-nic"]["mac"] != original_mac  # the pod's MAC is the VM's now
    assert links["eth0"]["mac"] == original_mac  # kept by the placeholder for whoever looks in the pod
    dhcp = read_dhcp_cache(PodRoot(tmp_path), "eth0")
    assert (str(dhcp.ip), dhcp.mac, dhcp.gateway) == (f"{POD_IP}/24", original_mac, CLIENT_IP)
    cached = setup.cache.read(vmi["metadata"]["uid"], "default")
    assert cached is not None
    assert cached.pod_ip == POD_IP

    launcher = LauncherNetwork(root=PodRoot(tmp_path), resolv_conf=resolv_conf)
    try:
        taps = topology.run(topology.pod, lambda: launcher.prepare(vmi))
        assert [(t.target, t.mac, t.mtu) for t in taps] == [("tap0", original_mac, POD_MTU)]
        topology.attach_guest("k6t-eth0", original_mac)
        lease = topology.udhcpc()
    finally:
        launcher.stop()
    assert lease["ip"] == POD_IP
    assert lease["subnet"] == "255.255.255.0"
    assert lease["router"] == CLIENT_IP
    assert lease["hostname"] == "myguest"
    assert lease["mtu"] == str(POD_MTU)
    assert lease["serverid"] == "169.254.75.10"
    assert lease["staticroutes"].split() == ["0.0.0.0/0", CLIENT_IP]

    # With the pod's address the VM is on the cluster network itself, both ways.
    guest_address(topology, f"{POD_IP}/24", CLIENT_IP)
    inbound, outbound = Listener(topology, topology.guest, 80), Listener(topology, topology.client, 9000)
    try:
        assert connect(topology, topology.client, POD_IP, 80) == b"ok"
        assert inbound.peers == [CLIENT_IP]
        assert connect(topology, topology.guest, CLIENT_IP, 9000) == b"ok"
        assert outbound.peers == [POD_IP]
    finally:
        inbound.close()
        outbound.close()


def test_a_failed_bridge_binding_gives_the_pod_its_link_back(topology: Topology, tmp_path: Path) -> None:
    def squat_tap() -> None:
        with IPRoute() as ipr:
            ipr.link("add", ifname="tap0", kind="bridge")

    topology.run(topology.pod, squat_tap)
    before = pod_links(topology)

    def default_route() -> list[str]:
        with IPRoute() as ipr:
            return [r.get_attr("RTA_GATEWAY") for r in ipr.get_default_routes(family=2)]

    with pytest.raises(NetworkError, match="creating tap tap0"):
        PodNetworkSetup(private_dir=tmp_path).setup(
            bridge_vmi(), 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)
        )
    after = pod_links(topology)
    assert set(after) == set(before)  # no bridge, no eth0-nic, no placeholder
    assert (after["eth0"]["mac"], after["eth0"]["ipv4"]) == (before["eth0"]["mac"], [POD_IP])
    assert topology.run(topology.pod, default_route) == [CLIENT_IP]
    listener = Listener(topology, topology.client, 9000)
    try:
        assert connect(topology, topology.pod, CLIENT_IP, 9000) == b"ok"  # the pod is on the network again
    finally:
        listener.close()


def test_phase_1_again_after_the_node_forgot_finds_the_pod_set_up(topology: Topology, tmp_path: Path) -> None:
    vmi = bridge_vmi()
    PodNetworkSetup(private_dir=tmp_path / "handler").setup(
        vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)
    )
    configured = pod_links(topology)
    # A handler without the node's record (its cache lost): the pod link has moved onto the bridge already.
    forgetful = PodNetworkSetup(private_dir=tmp_path / "handler-again")
    result = forgetful.setup(vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path))
    assert result is not None
    assert pod_links(topology) == configured  # nothing changed in the pod
    cached = forgetful.cache.read(vmi["metadata"]["uid"], "default")
    assert cached is not None
    assert cached.pod_ip == POD_IP
