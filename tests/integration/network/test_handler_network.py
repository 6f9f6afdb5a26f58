"""virt-handler's network hook against a real launcher stand-in: a process serving a unix socket from
inside the pod's network namespace. Its PID comes from the socket; phase 1 lands in its namespace."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyroute2 import IPRoute

from kubevirt.virt_handler.network import CONFIG_INVALID_REASON, HandlerNetwork, NetworkSetupError, peer_pid
from kubevirt_testing.pod_netns import Topology

SERVE = (
    "import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(60)"
)


@pytest.fixture
def launcher_socket(topology: Topology, tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    path = tmp_path / "launcher-sock"
    process = topology.run(topology.pod, lambda: subprocess.Popen([sys.executable, "-c", SERVE, str(path)]))
    deadline = time.monotonic() + 10
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    yield path, process
    process.kill()
    process.wait()


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
    topology: Topology, tmp_path: Path, launcher_socket: tuple[Path, subprocess.Popen[bytes]]
) -> None:
    path, process = launcher_socket
    assert peer_pid(path) == process.pid
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


def test_a_refused_vmi_names_the_field(
    tmp_path: Path, launcher_socket: tuple[Path, subprocess.Popen[bytes]]
) -> None:
    path, _ = launcher_socket
    bad = vmi({"name": "default", "masquerade": {}, "ports": [{"port": 80}, {"port": 80}]})
    with pytest.raises(NetworkSetupError) as caught:
        HandlerNetwork(private_dir=tmp_path).setup(bad, path)
    assert caught.value.reason == CONFIG_INVALID_REASON
    assert "spec.domain.devices.interfaces[0].ports[1].port" in caught.value.message
