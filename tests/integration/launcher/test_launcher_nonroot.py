"""virt-launcher as KubeVirt's default launcher pod runs it: uid and gid 107, every capability dropped
but NET_BIND_SERVICE, no_new_privs, and ``--run-as-nonroot``.

The launcher starts libvirtd in session mode as its own user, QEMU runs as that user, and every file
the launcher prepares (the serial log, the disks) works without root. The harness makes the pod's
volumes the user's as the pod's fsGroup would (see ``non_root_pod_steps`` in the conftest).
"""

from __future__ import annotations

import copy
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from kubevirt.network.setup.pod import PodNetworkSetup
from kubevirt.podroot import PodRoot
from kubevirt_testing.pod_netns import Topology

pytestmark = pytest.mark.timeout(240)

BOOT_BUDGET = 45.0  # a 3-8 s boot, allowing for a loaded machine
NETWORK_BOOT_BUDGET = 90.0  # the networked guest loads modules and asks for a lease first
NON_ROOT_UID = 107
VIRT_TAIL = shutil.which("virt-tail") or str(Path(sys.executable).parent / "virt-tail")
# The guest-console-log container: the same user, no capability at all.
CONSOLE_LOG_USER = (
    *("setpriv", "--reuid", str(NON_ROOT_UID), "--regid", str(NON_ROOT_UID), "--clear-groups"),
    *("--inh-caps=-all", "--bounding-set", "-all", "--no-new-privs"),
)
CAP_NET_BIND_SERVICE = 1 << 10
IMAGE_CONTENT = b"CONTAINER-DISK-CONTENT"
USER_DATA_MARKER = "USER-DATA-RAN-IN-THE-GUEST"


def process_status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def assert_runs_as_the_pod_user(pid: int) -> dict[str, str]:
    status = process_status(pid)
    assert status["Uid"].split() == [str(NON_ROOT_UID)] * 4
    assert status["Gid"].split() == [str(NON_ROOT_UID)] * 4
    assert status["NoNewPrivs"] == "1"
    assert int(status["CapBnd"], 16) == CAP_NET_BIND_SERVICE
    return status


def read_until(stream: IO[bytes], text: str, timeout: float) -> str:
    """What ``stream`` gave until a line held ``text`` or ``timeout`` passed."""
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in iter(stream.readline, b""):
            lines.append(line.decode(errors="replace"))
            if text in lines[-1]:
                found.set()

    threading.Thread(target=read, daemon=True).start()
    found.wait(timeout)
    return "".join(lines)


def non_root_vmi(make_vmi: Any, name: str) -> dict[str, Any]:
    vmi: dict[str, Any] = make_vmi(name)
    vmi["status"]["runtimeUser"] = NON_ROOT_UID  # what virt-controller writes without the Root gate
    return vmi


def test_boot_pause_unpause_stop_as_user_107(launcher_pods: Any, make_vmi: Any, guest_marker: str) -> None:
    vmi = non_root_vmi(make_vmi, "nonroot")
    started = time.monotonic()
    pod = launcher_pods(vmi, notify=True, non_root=True)
    assert pod.notify is not None
    launcher = assert_runs_as_the_pod_user(pod.process.pid)
    assert int(launcher["CapEff"], 16) == CAP_NET_BIND_SERVICE  # ambient: the DHCP server's port
    libvirtd = int(pod.in_pod("/var/run/kubevirt-private/libvirt/libvirtd.pid").read_text())
    assert_runs_as_the_pod_user(libvirtd)
    logged = [json.loads(line) for line in pod.logs().splitlines() if line.startswith("{")]
    connected = next(line for line in logged if line["msg"] == "connected to libvirt")
    assert connected["uri"].startswith("qemu+unix:///session?socket=")

    # The guest-console-log container sees the same volume; started before the domain, it waits for the
    # log, which QEMU creates.
    log = f"/var/run/kubevirt-private/{vmi['metadata']['uid']}/virt-serial0-log"
    in_the_pod = ("nsenter", f"--mount=/proc/{pod.process.pid}/ns/mnt")
    tail = subprocess.Popen(
        [*in_the_pod, *CONSOLE_LOG_USER, VIRT_TAIL, "--logfile", log], stdout=subprocess.PIPE
    )
    assert tail.stdout is not None
    try:
        pod.client.sync_vmi(vmi)
        serial = pod.wait_for_serial(guest_marker, BOOT_BUDGET)
        assert guest_marker in read_until(tail.stdout, guest_marker, 15)
    finally:
        tail.send_signal(signal.SIGTERM)
        tail.wait(10)
    print(f"guest marker {time.monotonic() - started:.1f}s after the launcher started")
    assert guest_marker in serial
    assert pod.status() == ("Running", "Unknown")
    # A session libvirt keeps QEMU's PID file where KubeVirt's non-root launcher looks for it.
    qemu = int(pod.in_pod(f"/var/run/libvirt/qemu/run/default_{vmi['metadata']['name']}.pid").read_text())
    assert_runs_as_the_pod_user(qemu)
    # The serial log is QEMU's, so the guest-console-log container (also 107) reads it.
    assert pod.serial_log.stat().st_uid == NON_ROOT_UID
    qemu_log = pod.in_pod(f"/var/run/kubevirt-private/libvirt/qemu/log/default_{vmi['metadata']['name']}.log")
    assert qemu_log.stat().st_uid == NON_ROOT_UID  # libvirt's session log, where KubeVirt reads it
    pod.notify.wait_for(lambda kind, domain: domain["Status"]["Status"] == "Running", 15)

    tick = pod.wait_for_tick_after(0)
    pod.client.vmi_command("PauseVirtualMachine", vmi)
    assert pod.status() == ("Paused", "User")
    frozen = pod.last_tick()
    time.sleep(2.5)
    assert pod.last_tick() <= frozen + 1
    pod.notify.wait_for(lambda kind, domain: domain["Status"]["Status"] == "Paused", 15)
    pod.client.vmi_command("UnpauseVirtualMachine", vmi)
    assert pod.status()[0] == "Running"
    pod.wait_for_tick_after(max(tick, frozen + 1))

    pod.client.vmi_command("KillVirtualMachine", vmi)
    assert pod.status() == ("Shutoff", "Destroyed")
    pod.client.vmi_command("DeleteVirtualMachine", vmi)
    assert pod.domain_or_gone() is None
    assert pod.wait_exit(20) == 0
    assert "the domain is gone" in pod.logs()


def test_the_guest_reads_disks_a_non_root_launcher_prepared(
    launcher_pods: Any, make_vmi: Any, disk_test_guest: Path, tmp_path: Path
) -> None:
    # The containerDisk image virt-handler would bind-mount: root's, read-only to the launcher's user.
    image = tmp_path / "pod" / "share" / "container-disks" / "disk_0.img"
    image.parent.mkdir(parents=True)
    subprocess.run(["qemu-img", "create", "-f", "raw", str(image), "4M"], check=True, capture_output=True)
    with image.open("r+b") as disk:
        disk.write(IMAGE_CONTENT)
    vmi = non_root_vmi(make_vmi, "nonroot-disks")
    volumes = [
        {"name": "root", "containerDisk": {"image": "registry.invalid/disk:1"}},
        {"name": "cloudinit", "cloudInitNoCloud": {"userData": f"#!/bin/sh\necho {USER_DATA_MARKER}\n"}},
        {"name": "scratch", "emptyDisk": {"capacity": "64Mi"}},
    ]
    vmi["spec"]["volumes"] = volumes
    vmi["spec"]["domain"]["devices"]["disks"] = [
        {"name": v["name"], "disk": {"bus": "virtio"}} for v in volumes
    ]
    pod = launcher_pods(vmi, guest=disk_test_guest, non_root=True)

    pod.client.sync_vmi(vmi)
    serial = pod.wait_for_serial("DISKS-CHECKED", BOOT_BUDGET)

    assert f"vda: {IMAGE_CONTENT.decode()}" in serial  # the image, read through the overlay
    assert " label=cidata\n" in serial
    assert USER_DATA_MARKER + "\n" in serial
    assert f"vdc: size={64 << 20} label=\n" in serial  # the empty disk
    overlay = pod.in_pod("/var/run/kubevirt-ephemeral-disks/disk-data/root/disk.qcow2")
    assert b"GUEST-WROTE-THIS" in overlay.read_bytes()
    assert image.read_bytes()[512:1024] == bytes(512)  # the image itself is never written
    for path in (
        overlay,
        pod.in_pod("/var/run/kubevirt-ephemeral-disks/cloud-init-data/default/nonroot-disks/noCloud.iso"),
        pod.in_pod("/var/run/libvirt/empty-disks/scratch.qcow2"),
    ):
        assert path.stat().st_uid == NON_ROOT_UID, path


def test_a_non_root_guest_live_migrates_to_a_non_root_target(
    launcher_pods: Any, make_vmi: Any, guest_marker: str
) -> None:
    vmi = non_root_vmi(make_vmi, "nonroot-migrant")
    source = launcher_pods(vmi, name="source", non_root=True)
    source.client.sync_vmi(vmi)
    source.wait_for_serial(guest_marker, BOOT_BUDGET)
    target = launcher_pods(vmi, name="target", non_root=True)
    target.client.vmi_command("SyncMigrationTarget", vmi)
    # Standing in for virt-handler's proxies: the source's proxy sockets lead to the target's libvirt
    # (session mode: the source must ask for qemu:///session) and to its incoming-migration socket.
    proxies, uid = source.share_dir / "migrationproxy", vmi["metadata"]["uid"]
    (proxies / f"{uid}-source.sock").symlink_to(target.libvirt_socket)
    (proxies / f"{uid}-49152-source.sock").symlink_to(  # through the pod: the test's tmp is root's alone
        target.in_pod(f"/var/run/kubevirt/migrationproxy/{uid}-49152-source.sock")
    )
    migrating = copy.deepcopy(vmi)
    migrating["status"].update(phase="Running", migrationState={"migrationUid": "migration-1"})
    source.client.migrate_vmi(migrating, {})
    deadline = time.monotonic() + 60
    while not (source.kubevirt_metadata()["Migration"] or {}).get("EndTimestamp"):
        assert time.monotonic() < deadline, "the migration did not end"
        time.sleep(0.1)
    result = source.kubevirt_metadata()["Migration"]
    assert result["Completed"] is True, result
    assert source.status() == ("Shutoff", "Migrated")
    assert target.status() == ("Running", "Unknown")
    last_on_source = source.last_tick()
    assert target.wait_for_tick_after(last_on_source) > last_on_source
    qemu = int(target.in_pod(f"/var/run/libvirt/qemu/run/default_{vmi['metadata']['name']}.pid").read_text())
    assert_runs_as_the_pod_user(qemu)


@pytest.fixture
def topology(tmp_path: Path) -> Iterator[Topology]:
    made = Topology(tmp_path)
    yield made
    made.close()


def test_a_non_root_masquerade_guest_gets_its_lease_through_a_tap_of_its_user(
    topology: Topology,
    tmp_path: Path,
    launcher_pods: Any,
    make_vmi: Any,
    network_test_guest: Path,
    guest_net_initrd: str,
) -> None:
    vmi = non_root_vmi(make_vmi, "nonroot-net")
    vmi["spec"]["domain"]["firmware"]["kernelBoot"]["container"]["initrdPath"] = f"/boot/{guest_net_initrd}"
    vmi["spec"]["domain"]["devices"] = {"interfaces": [{"name": "default", "masquerade": {}}]}
    vmi["spec"]["networks"] = [{"name": "default", "pod": {}}]
    vmi["status"]["migrationTransport"] = "Unix"
    # Phase 1 as virt-handler runs it: the tap belongs to the VMI's runtimeUser, whose QEMU opens it.
    setup = PodNetworkSetup(private_dir=tmp_path / "handler")
    assert setup.setup(vmi, 0, netns=topology.path(topology.pod), root=PodRoot(tmp_path)) is not None
    pod = topology.run(topology.pod, lambda: launcher_pods(vmi, non_root=True))
    pod.client.sync_vmi(vmi)  # the DHCP server binds port 67 with the ambient NET_BIND_SERVICE
    serial = pod.wait_for_serial("DHCP-BOUND", NETWORK_BOOT_BUDGET)
    assert "ip=10.0.2.2 " in serial.split("DHCP-BOUND", 1)[1].splitlines()[0]
