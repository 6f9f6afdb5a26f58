"""Live migration of a running real guest between two launchers, each with its own libvirtd.

The test plays both virt-handlers: it prepares the target (SyncMigrationTarget) and stands in for the
migration proxies by linking the source's proxy sockets to the target's libvirt socket and to the
target's incoming-migration socket, then calls MigrateVirtualMachine on the source.
"""

from __future__ import annotations

import copy
import os
import time
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(240)

BOOT_BUDGET = 30.0  # the guest boots in 3-8 s; the wait allows for a loaded machine


def connect_proxies(source: Any, target: Any) -> None:
    uid = source.uid
    proxies = source.share_dir / "migrationproxy"
    for name in (f"{uid}-source.sock", f"{uid}-49152-source.sock"):
        (proxies / name).unlink(missing_ok=True)
    os.symlink(target.libvirt_socket, proxies / f"{uid}-source.sock")
    os.symlink(
        target.share_dir / "migrationproxy" / f"{uid}-49152-source.sock", proxies / f"{uid}-49152-source.sock"
    )


def migrating(vmi: dict[str, Any], migration_uid: str) -> dict[str, Any]:
    result = copy.deepcopy(vmi)
    result["status"]["phase"] = "Running"
    result["status"]["migrationState"] = {"migrationUid": migration_uid}
    return result


def wait_for_migration_end(pod: Any, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        migration: dict[str, Any] = pod.kubevirt_metadata()["Migration"] or {}
        if migration.get("EndTimestamp"):
            return migration
        time.sleep(0.1)
    raise AssertionError(f"the migration did not end in {timeout}s: {pod.kubevirt_metadata()}")


def test_cancelled_migration_keeps_guest_on_source_then_live_migration_moves_it(
    launcher_pods: Any, make_vmi: Any, guest_marker: str
) -> None:
    vmi = make_vmi("migrant")
    source = launcher_pods(vmi, name="source", notify=True)
    source.client.sync_vmi(vmi)
    source.wait_for_serial(guest_marker, BOOT_BUDGET)
    running = migrating(vmi, "migration-1")

    # A migration throttled to 1 MiB/s cannot finish before we cancel it.
    slow_target = launcher_pods(vmi, name="slow-target")
    slow_target.client.vmi_command("SyncMigrationTarget", vmi)
    connect_proxies(source, slow_target)
    source.client.migrate_vmi(running, {"Bandwidth": "1Mi", "ProgressTimeout": 150})
    time.sleep(1.0)
    source.client.vmi_command("CancelVirtualMachineMigration", running)
    cancelled = wait_for_migration_end(source)
    assert cancelled["Failed"] is True
    assert cancelled["AbortStatus"] == "Succeeded"
    assert cancelled["UID"] == "migration-1"
    assert source.status()[0] == "Running"
    tick = source.wait_for_tick_after(source.last_tick())
    assert slow_target.wait_exit(30) == 0  # the incoming domain vanished: nothing left to serve

    # Now a real live migration to a fresh target.
    target = launcher_pods(vmi, name="target", notify=True)
    target.client.vmi_command("SyncMigrationTarget", vmi)
    connect_proxies(source, target)
    second = migrating(vmi, "migration-2")
    started = time.monotonic()
    source.client.migrate_vmi(second, {"AllowAutoConverge": True})
    result = wait_for_migration_end(source)
    print(f"live migration took {time.monotonic() - started:.2f}s")
    assert result["Completed"] is True, result
    assert result["Failed"] is False
    assert result["Mode"] == "PreCopy"
    assert result["UID"] == "migration-2"
    assert source.status() == ("Shutoff", "Migrated")
    assert target.status() == ("Running", "Unknown")  # KubeVirt names no reason for a running domain
    assert target.notify is not None
    target.notify.wait_for(lambda kind, domain: kind == "ADDED", 10)

    # The guest carries on on the target: its ticks continue where the source's stopped.
    last_on_source = source.last_tick()
    assert last_on_source >= tick
    continued = target.wait_for_tick_after(last_on_source, timeout=10)
    assert continued > last_on_source
    assert guest_marker not in target.serial_text()  # no reboot happened on the target

    source.client.vmi_command("DeleteVirtualMachine", running)
    assert source.wait_exit(30) == 0


def test_slow_migration_is_aborted_or_switched_to_post_copy_at_its_deadline(
    launcher_pods: Any, make_vmi: Any, guest_marker: str
) -> None:
    vmi = make_vmi("postcopy")
    source = launcher_pods(vmi, name="source")
    source.client.sync_vmi(vmi)
    source.wait_for_serial(guest_marker, BOOT_BUDGET)
    # 128 MiB at 1 MiB/s would take two minutes; the deadline is 2 s (per GiB, at least one GiB).
    throttled = {"Bandwidth": "1Mi", "CompletionTimeoutPerGiB": 2}

    target = launcher_pods(vmi, name="target-1")
    target.client.vmi_command("SyncMigrationTarget", vmi)
    connect_proxies(source, target)
    source.client.migrate_vmi(migrating(vmi, "too-slow"), throttled)
    aborted = wait_for_migration_end(source)
    assert aborted["Failed"] is True, aborted
    assert aborted["Mode"] == "PreCopy"
    assert source.status()[0] == "Running"
    source.wait_for_tick_after(source.last_tick())
    assert target.wait_exit(30) == 0

    target = launcher_pods(vmi, name="target-2")
    target.client.vmi_command("SyncMigrationTarget", vmi)
    connect_proxies(source, target)
    source.client.migrate_vmi(migrating(vmi, "post-copy"), {**throttled, "AllowPostCopy": True})
    switched = wait_for_migration_end(source)
    assert switched["Completed"] is True, switched
    assert switched["Mode"] == "PostCopy"
    assert target.status()[0] == "Running"
    target.wait_for_tick_after(source.last_tick())
