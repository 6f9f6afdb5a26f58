"""The VM's DHCP server needs no more than KubeVirt gives the compute container: phase 2 runs in a process
whose only capability is NET_BIND_SERVICE (no NET_ADMIN, no NET_RAW), and a real client still gets its
address, for the masquerade and the bridge binding alike."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from kubevirt.network.setup.pod import PodNetworkSetup
from kubevirt.podroot import PodRoot
from kubevirt_testing.pod_netns import POD_IP, Topology

pytestmark = pytest.mark.timeout(120)

# Phase 2 as virt-launcher runs it: the DHCP server answers until stdin closes.
PHASE_2 = """
import json, sys
from pathlib import Path
from kubevirt.network.launcher import LauncherNetwork
from kubevirt.podroot import PodRoot
network = LauncherNetwork(root=PodRoot(Path(sys.argv[1])), resolv_conf=Path(sys.argv[2]))
(tap,) = network.prepare(json.loads(sys.argv[3]))
print("tap-mac", tap.mac, flush=True)
sys.stdin.read()
network.stop()
"""


def vmi(binding: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "testvmi", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {
            "domain": {"devices": {"interfaces": [{"name": "default", binding: {}}]}},
            "networks": [{"name": "default", "pod": {}}],
        },
        "status": {"phase": "Scheduled", "runtimeUser": 0, "migrationTransport": "Unix"},
    }


def effective_capabilities(process: subprocess.Popen[str]) -> int:
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    raise AssertionError("no CapEff line")


@pytest.mark.parametrize(("binding", "address"), [("masquerade", "10.0.2.2"), ("bridge", POD_IP)])
def test_dhcp_with_only_net_bind_service(
    topology: Topology, tmp_path: Path, resolv_conf: Path, binding: str, address: str
) -> None:
    spec = vmi(binding)
    PodNetworkSetup(private_dir=tmp_path / "handler").setup(
        spec, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)
    )
    command = [
        "nsenter",
        f"--net={topology.path(topology.pod)}",
        "setpriv",
        "--bounding-set=-all,+net_bind_service",  # root keeps only what the bounding set allows
        "--",
        sys.executable,
        "-c",
        PHASE_2,
        str(tmp_path),
        str(resolv_conf),
        json.dumps(spec),
    ]
    launcher = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert launcher.stdout is not None
        mac = ""
        for line in launcher.stdout:  # the launcher's log lines come first
            if line.startswith("tap-mac "):
                mac = line.split()[1]
                break
        assert mac, "phase 2 did not start"
        net_bind_service, net_admin, net_raw = 1 << 10, 1 << 12, 1 << 13
        capabilities = effective_capabilities(launcher)
        assert capabilities & net_bind_service
        assert not capabilities & (net_admin | net_raw)
        topology.attach_guest("k6t-eth0", mac)
        lease = topology.udhcpc()
        assert lease["ip"] == address
        assert lease["hostname"] == "testvmi"
    finally:
        assert launcher.stdin is not None
        launcher.stdin.close()
        launcher.wait(10)
