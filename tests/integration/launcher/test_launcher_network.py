"""One real guest on the pod network: phase 1 in a pod-like network namespace, virt-launcher (phase 2 and
QEMU) started inside it, the guest's own udhcpc getting 10.0.2.2 from the launcher DHCP server via tap0, and
an HTTP request from the "cluster" to the pod's IP answered by the guest."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kubevirt.network.setup.pod import PodNetworkSetup
from kubevirt.podroot import PodRoot
from kubevirt_testing.pod_netns import POD_IP, Topology

pytestmark = pytest.mark.timeout(240)
BOOT_BUDGET = 90.0


@pytest.fixture
def topology(tmp_path: Path) -> Any:
    made = Topology(tmp_path)
    yield made
    made.close()


def test_a_masquerade_guest_gets_its_address_and_serves_the_cluster(
    topology: Topology,
    tmp_path: Path,
    launcher_pods: Any,
    make_vmi: Any,
    network_test_guest: Path,
    guest_net_initrd: str,
) -> None:
    vmi = make_vmi("netguest")
    vmi["spec"]["domain"]["firmware"]["kernelBoot"]["container"]["initrdPath"] = f"/boot/{guest_net_initrd}"
    vmi["spec"]["domain"]["devices"] = {"interfaces": [{"name": "default", "masquerade": {}}]}
    vmi["spec"]["networks"] = [{"name": "default", "pod": {}}]
    vmi["status"]["migrationTransport"] = "Unix"

    started = time.monotonic()
    setup = PodNetworkSetup(private_dir=tmp_path / "handler")
    phase1 = setup.setup(vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path))
    assert phase1 is not None
    pod = topology.run(topology.pod, lambda: launcher_pods(vmi))  # the launcher lives in the pod's namespace
    synced = time.monotonic()
    pod.client.sync_vmi(vmi)
    phase2 = time.monotonic() - synced
    domain = pod.client.get_domain()
    assert domain is not None
    (nic,) = domain["Spec"]["Devices"]["Interfaces"]
    assert nic["Target"] == {"Device": "tap0", "Managed": "no"}
    assert nic["MTU"] == {"Size": "1400"}

    serial = pod.wait_for_serial("DHCP-BOUND", BOOT_BUDGET)
    lease = serial.split("DHCP-BOUND", 1)[1].splitlines()[0]
    print(
        f"phase 1 {phase1.seconds * 1000:.0f} ms, sync (phase 2 + define + start) {phase2:.2f} s, "
        f"lease after {time.monotonic() - started:.1f} s: {lease.strip()}"
    )
    assert "ip=10.0.2.2 " in lease
    assert "router=10.0.2.1 " in lease
    assert "mtu=1400" in lease

    def fetch() -> bytes:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://{POD_IP}/index.html", timeout=5) as response:
                    return bytes(response.read())
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    assert topology.run(topology.client, fetch).strip() == b"hello-from-the-guest"
