"""virt-launcher boots a real guest under QEMU/TCG through SyncVirtualMachine and runs its whole lifecycle.

The guest prints a marker and then one numbered tick per second to its serial port, which QEMU logs to
the file the converter configured; the test reads it from the launcher's mount namespace.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(180)

# The guest boots in 3-8 s; the wait allows for a loaded machine.
BOOT_BUDGET = 30.0


def test_boot_pause_unpause_shutdown_kill_delete(
    launcher_pods: Any, make_vmi: Any, guest_marker: str
) -> None:
    vmi = make_vmi("lifecycle")
    pod = launcher_pods(vmi, notify=True)
    assert pod.notify is not None

    started = time.monotonic()
    pod.client.sync_vmi(vmi)
    pod.client.sync_vmi(vmi)  # idempotent: no second definition, no error
    serial = pod.wait_for_serial(guest_marker, BOOT_BUDGET)
    boot_seconds = time.monotonic() - started
    print(f"guest marker after {boot_seconds:.1f}s")
    assert guest_marker in serial
    assert pod.status() == ("Running", "Unknown")  # KubeVirt names no reason for a running domain
    live = pod.client.get_domain()
    assert live is not None
    assert live["Spec"]["Type"] == "qemu"  # emulated: /dev/kvm does not work everywhere
    assert live["Spec"]["OS"]["Type"]["Machine"].startswith("pc-q35-")  # what libvirt made of "q35"
    assert pod.kubevirt_metadata()["UID"] == vmi["metadata"]["uid"]
    assert pod.kubevirt_metadata()["GracePeriod"]["DeletionGracePeriodSeconds"] == 5
    pod.notify.wait_for(lambda kind, domain: kind == "ADDED", 15)
    pod.notify.wait_for(lambda kind, domain: domain["Status"]["Status"] == "Running", 15)

    tick = pod.wait_for_tick_after(0)
    pod.client.vmi_command("PauseVirtualMachine", vmi)
    assert pod.status() == ("Paused", "User")
    frozen = pod.last_tick()
    pod.client.sync_vmi(vmi)  # a sync never resumes a guest the user paused
    time.sleep(2.5)
    assert pod.last_tick() <= frozen + 1
    assert pod.status() == ("Paused", "User")
    pod.notify.wait_for(lambda kind, domain: domain["Status"]["Status"] == "Paused", 15)

    pod.client.vmi_command("UnpauseVirtualMachine", vmi)
    assert pod.status()[0] == "Running"
    tick = pod.wait_for_tick_after(max(tick, frozen + 1))

    # The busybox guest ignores the ACPI button; the request is still recorded for the grace period.
    pod.client.vmi_command("ShutdownVirtualMachine", vmi)
    assert pod.kubevirt_metadata()["GracePeriod"]["DeletionTimestamp"] is not None
    assert pod.status()[0] == "Running"

    pod.client.vmi_command("KillVirtualMachine", vmi)
    assert pod.status() == ("Shutoff", "Destroyed")
    pod.client.vmi_command("KillVirtualMachine", vmi)  # killing a stopped domain is no error

    pod.client.vmi_command("DeleteVirtualMachine", vmi)
    assert pod.domain_or_gone() is None
    final = pod.notify.wait_for(lambda kind, domain: "deletionTimestamp" in domain["ObjectMeta"], 15)
    assert final[0] == "MODIFIED"
    assert final[1]["Status"] == {**final[1]["Status"], "Status": "NoState", "Reason": "NonExistent"}
    assert final[1]["ObjectMeta"]["uid"] == vmi["metadata"]["uid"]

    assert pod.wait_exit(20) == 0
    assert "the domain is gone" in pod.logs()


def test_start_paused_then_sigterm_kills_after_grace_period(
    launcher_pods: Any, make_vmi: Any, guest_marker: str
) -> None:
    vmi = make_vmi("graceful", startStrategy="Paused")
    pod = launcher_pods(vmi, grace_period=2)
    pod.client.sync_vmi(vmi)
    assert pod.status() == ("Paused", "User")
    pod.client.sync_vmi(vmi)
    assert pod.status() == ("Paused", "User")
    pod.client.vmi_command("UnpauseVirtualMachine", vmi)
    pod.wait_for_serial(guest_marker, BOOT_BUDGET)

    pod.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 5
    while not (pod.kubevirt_metadata()["GracePeriod"] or {}).get("MarkedForGracefulShutdown"):
        assert time.monotonic() < deadline, "the launcher did not mark the domain for graceful shutdown"
        time.sleep(0.1)
    # Nobody shuts the guest down: the launcher kills it when its own grace period ends, then exits.
    assert pod.wait_exit(30) == 0
    assert "grace period expired" in pod.logs()


def test_launcher_exits_when_libvirt_dies(launcher_pods: Any, make_vmi: Any, guest_marker: str) -> None:
    vmi = make_vmi("nolibvirt")
    pod = launcher_pods(vmi)
    pid_file = pod.in_pod("/var/run/kubevirt-private/libvirt/libvirtd.pid")
    libvirtd_pid = int(pid_file.read_text().strip())
    os.kill(libvirtd_pid, signal.SIGKILL)
    assert pod.wait_exit(20) == 1
    assert "libvirt died" in pod.logs()
