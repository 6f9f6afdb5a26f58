"""virt-handler's network hook against a real launcher stand-in: a process of the pod (its cgroup, its own
PID and mount namespaces, the pod's network namespace) serving the launcher socket in the pod's sockets
volume. Its PID comes from the socket; phase 1 lands in its namespace, and nowhere else."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyroute2 import IPRoute

from kubevirt.virt_handler.launcher_sockets import find_launcher_socket
from kubevirt.virt_handler.network import (
    CONFIG_INVALID_REASON,
    SETUP_FAILED_REASON,
    HandlerNetwork,
    NetworkSetupError,
)
from kubevirt.virt_handler.pod_sockets import launcher_pid
from kubevirt_testing import pod_process
from kubevirt_testing.launcher_socket import sockets_dir
from kubevirt_testing.pod_netns import Topology

SERVE = (
    "import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(60)"
)


@pytest.fixture
def launcher_socket(topology: Topology) -> Iterator[tuple[Path, int]]:
    """The launcher socket below a pods directory and the PID of the pod's process serving it."""
    pods_dir = Path(tempfile.mkdtemp(prefix="p", dir="/tmp"))  # short: socket paths have a size limit
    pod_uid = str(uuid.uuid4())
    directory = sockets_dir(pods_dir, pod_uid)
    directory.mkdir(parents=True)
    argv = pod_process.in_pod_namespaces([sys.executable, "-c", SERVE, "launcher-sock"], network=False)
    process = topology.run(
        topology.pod,
        lambda: subprocess.Popen(argv, cwd=directory, preexec_fn=pod_process.join_cgroup(pod_uid)),
    )
    path = find_socket(pods_dir, pod_uid)
    yield path, pod_process.wait_for_child(process.pid)
    pod_process.kill(process)
    pod_process.remove_cgroup(pod_uid)
    subprocess.run(["rm", "-rf", str(pods_dir)], check=True)


def find_socket(pods_dir: Path, pod_uid: str) -> Path:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            return find_launcher_socket(pods_dir, {pod_uid: "node"}, "node")
        except Exception:
            time.sleep(0.05)
    raise AssertionError("the launcher stand-in did not listen")


def vmi(iface: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "v", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {
            "domain": {"devices": {"interfaces": [iface]}},
            "networks": [{"name": "default", "pod": {}}],
        },
        "status": {"runtimeUser": 0, "migrationTransport": "Unix"},
    }


def test_phase_one_enters_the_launchers_namespace(
    topology: Topology, tmp_path: Path, launcher_socket: tuple[Path, int]
) -> None:
    path, pid = launcher_socket
    assert launcher_pid(path) == pid
    network = HandlerNetwork(private_dir=tmp_path / "private")
    masquerade = vmi({"name": "default", "masquerade": {}})
    network.setup(masquerade, path)
    network.setup(masquerade, path)  # once per VMI: the second call finds it done

    def bridge_exists() -> bool:
        with IPRoute() as ipr:
            return bool(ipr.link_lookup(ifname="k6t-eth0"))

    assert topology.run(topology.pod, bridge_exists)
    with IPRoute() as ipr:
        assert not ipr.link_lookup(ifname="k6t-eth0")  # nothing on the node itself
    status = network.interface_status(masquerade, [{"name": "default", "mac": "x", "infoSource": "domain"}])
    assert status[0]["ipAddress"] == "10.244.7.2"
    network.forget(masquerade["metadata"]["uid"])
    assert list((tmp_path / "private" / "network-info-cache").iterdir()) == []


def test_a_refused_vmi_names_the_field(tmp_path: Path, launcher_socket: tuple[Path, int]) -> None:
    path, _ = launcher_socket
    bad = vmi({"name": "default", "masquerade": {}, "ports": [{"port": 80}, {"port": 80}]})
    with pytest.raises(NetworkSetupError) as caught:
        HandlerNetwork(private_dir=tmp_path).setup(bad, path)
    assert caught.value.reason == CONFIG_INVALID_REASON
    assert "spec.domain.devices.interfaces[0].ports[1].port" in caught.value.message


def test_a_socket_swapped_for_a_link_after_the_lookup_never_reaches_the_node(
    tmp_path: Path, launcher_socket: tuple[Path, int]
) -> None:
    # The pod swaps its launcher socket for a link to a socket a node process serves, between the
    # handler's lookup and phase 1: followed, phase 1 would run in the node's network namespace.
    path, _ = launcher_socket
    node_links = _links()
    node_side = tmp_path / "node"
    node_side.mkdir()
    node_process = subprocess.Popen([sys.executable, "-c", SERVE, "node.sock"], cwd=node_side)
    try:
        while not (node_side / "node.sock").exists():
            time.sleep(0.05)
        os.rename(path, path.with_name("moved-away"))
        path.symlink_to(node_side / "node.sock")
        with pytest.raises(NetworkSetupError) as caught:
            HandlerNetwork(private_dir=tmp_path / "private").setup(
                vmi({"name": "default", "masquerade": {}}), path
            )
    finally:
        node_process.kill()
        node_process.wait()
    assert caught.value.reason == SETUP_FAILED_REASON
    assert "launcher-sock: refused, a symlink" in caught.value.message
    assert _links() == node_links  # no bridge, tap or renamed link on the node


def _links() -> set[tuple[str, str, tuple[str, ...]]]:
    """The node's links with their state and addresses."""
    with IPRoute() as ipr:
        addresses: dict[int, list[str]] = {}
        for address in ipr.get_addr():
            addresses.setdefault(address["index"], []).append(str(address.get_attr("IFA_ADDRESS")))
        return {
            (
                str(link.get_attr("IFLA_IFNAME")),
                str(link.get_attr("IFLA_OPERSTATE")),
                tuple(sorted(addresses.get(link["index"], []))),
            )
            for link in ipr.get_links()
        }
