"""The VMI status virt-handler derives from the domain: conditions, fields, events and write counts."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller import RequeueAfter, Store
from kubevirt.virt_handler import migratable, status_conditions
from kubevirt.virt_handler import status as vmi_status
from kubevirt.virt_handler.domain_events import DomainEventLog
from kubevirt.virt_handler.guest_agent import REQUIRED_COMMANDS
from kubevirt.virt_handler.migratable import MigratabilityFacts
from kubevirt.virt_handler.rest.lifecycle import LauncherLocator, LifecycleHandler
from kubevirt.virt_handler.status import libvirt_quantity
from kubevirt.virt_handler.vm_controller import RUNNING_RESYNC_SECONDS
from kubevirt_testing.events import RecordedEvents

from .test_vm_controller import NODE, FakeLauncher, Harness, _domain, _vmi, pods_dir

__all__ = ["pods_dir"]  # the fixture, used by name

JSON = dict[str, Any]
NOW = "2026-01-01T00:00:00Z"


def _now() -> str:
    return NOW


class DomainLauncher(FakeLauncher):
    """A launcher whose domain stays what the test made it (syncing an existing domain changes nothing)."""

    def __init__(self, domain: JSON) -> None:
        super().__init__()
        self.template = domain

    def sync_vmi(self, vmi: JSON, options: Any = None) -> None:
        self.calls.append("SyncVirtualMachine")
        if self.domain is None:
            self.domain = copy.deepcopy(self.template)


def _rich_domain(state: str = "Running", reason: str = "Booted", agent: str = "connected") -> JSON:
    domain = _domain(state, reason)
    domain["Spec"]["OS"] = {"Type": {"Machine": "pc-q35-9.2", "OS": "hvm"}}
    domain["Spec"]["CurrentMemory"] = {"Unit": "KiB", "Value": 131072}
    domain["Spec"]["Devices"]["Channels"] = [
        {"Type": "unix", "Target": {"Name": "org.qemu.guest_agent.0", "Type": "virtio", "State": agent}}
    ]
    domain["Spec"]["Devices"]["Disks"] = [
        {
            "Alias": {"Name": "ua-rootdisk"},
            "Source": {"File": "/var/run/disk.qcow2"},
            "Target": {"Device": "vda"},
        }
    ]
    return domain


def _masquerade_vmi() -> JSON:
    vmi = _vmi()
    vmi["spec"] = {
        "domain": {
            "devices": {
                "disks": [{"name": "rootdisk", "disk": {"bus": "virtio"}}],
                "interfaces": [{"name": "default", "masquerade": {}}],
            }
        },
        "networks": [{"name": "default", "pod": {}}],
        "volumes": [{"name": "rootdisk", "containerDisk": {"image": "example/disk"}}],
    }
    vmi["status"]["volumeStatus"] = [{"name": "rootdisk"}]
    return vmi


def _harness(pods_dir: Path, vmi: JSON, domain: JSON, facts: MigratabilityFacts | None = None) -> Harness:
    harness = Harness(pods_dir, vmi)
    harness.launcher = DomainLauncher(domain)
    if facts is not None:
        harness.controller._migratability_facts = facts
    return harness


def _condition(vmi: JSON, kind: str) -> JSON | None:
    return next((c for c in vmi["status"].get("conditions") or [] if c["type"] == kind), None)


def _vmi_writes(harness: Harness) -> int:
    return sum(1 for w in harness.api.writes if w[1] == VIRTUAL_MACHINE_INSTANCES.plural)


def test_a_running_domain_fills_the_handlers_status_fields(pods_dir: Path) -> None:
    harness = _harness(pods_dir, _masquerade_vmi(), _rich_domain())
    vmi = harness.start()
    status = vmi["status"]
    assert status["phase"] == "Running"
    assert status["machine"] == {"type": "pc-q35-9.2"}
    assert status["memory"] == {"guestCurrent": "128Mi"}
    assert status["volumeStatus"] == [{"name": "rootdisk", "target": "vda"}]
    assert status["migrationMethod"] == "BlockMigration"  # the containerDisk overlay is local
    live = _condition(vmi, "LiveMigratable")
    assert live is not None
    assert live["status"] == "True"
    storage = _condition(vmi, "StorageLiveMigratable")
    assert storage is not None
    assert storage["status"] == "True"
    agent = _condition(vmi, "AgentConnected")
    assert agent is not None
    assert agent["status"] == "True"
    assert _condition(vmi, "Paused") is None


def test_an_unchanged_domain_is_written_once_and_each_change_once(pods_dir: Path) -> None:
    harness = _harness(pods_dir, _masquerade_vmi(), _rich_domain())
    harness.start()
    # The sync that starts the domain writes nothing; the next reports Running with every derived field.
    assert _vmi_writes(harness) == 1
    for _ in range(3):
        harness.reconcile()
    assert _vmi_writes(harness) == 1  # nothing observed changed: no write

    assert harness.launcher.domain is not None
    harness.launcher.domain["Status"].update(Status="Paused", Reason="User")
    vmi = harness.reconcile()
    paused = _condition(vmi, "Paused")
    assert paused is not None
    assert (paused["status"], paused["reason"], paused["message"]) == (
        "True",
        "PausedByUser",
        "VMI was paused by user",
    )
    harness.reconcile()
    harness.reconcile()
    assert _vmi_writes(harness) == 2

    harness.launcher.domain["Status"].update(Status="Running", Reason="Unpaused")
    vmi = harness.reconcile()
    assert _condition(vmi, "Paused") is None
    harness.reconcile()
    assert _vmi_writes(harness) == 3


def test_the_agent_condition_follows_the_guest_agent_channel(pods_dir: Path) -> None:
    harness = _harness(pods_dir, _masquerade_vmi(), _rich_domain(agent="disconnected"))
    vmi = harness.reconcile()
    assert _condition(vmi, "AgentConnected") is None
    assert harness.launcher.domain is not None
    harness.launcher.domain["Spec"]["Devices"]["Channels"][0]["Target"]["State"] = "connected"
    vmi = harness.reconcile()
    assert _condition(vmi, "AgentConnected") is not None
    harness.launcher.domain["Spec"]["Devices"]["Channels"][0]["Target"]["State"] = "disconnected"
    vmi = harness.reconcile()
    assert _condition(vmi, "AgentConnected") is None


def test_an_agent_without_kubevirts_basic_commands_is_reported_unsupported(pods_dir: Path) -> None:
    harness = _harness(pods_dir, _masquerade_vmi(), _rich_domain())
    launcher = harness.launcher
    assert isinstance(launcher, FakeLauncher)
    launcher.guest_info = {
        "guestAgentVersion": "7.2.0",
        "supportedCommands": [{"name": "guest-ping", "enabled": True}],
    }
    harness.start()
    vmi = harness.reconcile()
    unsupported = _condition(vmi, "AgentVersionNotSupported")
    assert unsupported is not None
    assert (unsupported["status"], unsupported["reason"]) == (
        "True",
        "This guest agent doesn't support required basic commands",
    )
    # The agent is upgraded in the guest: the condition goes.
    launcher.guest_info["supportedCommands"] = [{"name": n, "enabled": True} for n in REQUIRED_COMMANDS]
    vmi = harness.reconcile()
    assert _condition(vmi, "AgentVersionNotSupported") is None
    assert _condition(vmi, "AgentConnected") is not None


def test_the_agent_is_not_asked_while_its_channel_is_disconnected(pods_dir: Path) -> None:
    harness = _harness(pods_dir, _masquerade_vmi(), _rich_domain(agent="disconnected"))
    harness.start()
    harness.reconcile()
    assert "GetGuestInfo" not in harness.launcher.calls


def test_a_failed_sync_is_a_sync_failed_event(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.launcher.fail = "virError(Code=1): boom"
    harness.reconcile()
    message = 'server error. command SyncVMI failed: "virError(Code=1): boom"'
    assert ("Warning", "SyncFailed", message) in harness.events.seen
    assert not [e for e in harness.events.seen if e[1] == "Created"]


def _live(vmi: JSON, facts: MigratabilityFacts | None = None) -> tuple[JSON, JSON, str]:
    vmi.setdefault("status", {})
    migratable.update_live_migratable(vmi["status"], vmi, facts or MigratabilityFacts())
    live = _condition(vmi, "LiveMigratable")
    storage = _condition(vmi, "StorageLiveMigratable")
    assert live is not None
    assert storage is not None
    return live, storage, vmi["status"]["migrationMethod"]


def test_a_bridge_on_the_pod_network_is_not_migratable_unless_annotated() -> None:
    vmi = _masquerade_vmi()
    vmi["spec"]["domain"]["devices"]["interfaces"] = [{"name": "default", "bridge": {}}]
    live, storage, _ = _live(vmi)
    assert (live["status"], live["reason"]) == ("False", "InterfaceNotLiveMigratable")
    assert "kubevirt.io/allow-pod-bridge-network-live-migration" in live["message"]
    assert (storage["status"], storage["reason"]) == ("False", "NotMigratable")
    assert storage["message"].startswith("InterfaceNotLiveMigratable: cannot migrate VMI")

    vmi["metadata"]["annotations"] = {"kubevirt.io/allow-pod-bridge-network-live-migration": ""}
    live, storage, _ = _live(vmi)
    assert live["status"] == "True"
    assert storage["status"] == "True"


def test_volumes_decide_block_migration_and_refuse_unshared_claims() -> None:
    vmi = _masquerade_vmi()
    vmi["spec"]["volumes"] = [{"name": "rootdisk", "persistentVolumeClaim": {"claimName": "root"}}]
    vmi["status"]["volumeStatus"] = [
        {
            "name": "rootdisk",
            "persistentVolumeClaimInfo": {"claimName": "root", "accessModes": ["ReadWriteOnce"]},
        }
    ]
    live, storage, method = _live(vmi)
    assert (live["status"], live["reason"]) == ("False", "DisksNotLiveMigratable")
    assert live["message"] == (
        "cannot migrate VMI: PVC root is not shared, live migration requires that all PVCs must be shared "
        "(using ReadWriteMany access mode)"
    )
    assert storage["status"] == "True"  # storage migration can move an unshared claim
    assert method == "BlockMigration"

    vmi["status"]["volumeStatus"][0]["persistentVolumeClaimInfo"]["accessModes"] = ["ReadWriteMany"]
    live, _, method = _live(vmi)
    assert live["status"] == "True"
    assert method == "LiveMigration"


def test_host_model_needs_a_host_model_on_the_node() -> None:
    vmi = _masquerade_vmi()
    vmi["spec"]["domain"]["cpu"] = {"model": "host-model"}
    vmi["status"]["nodeName"] = NODE
    live, _, _ = _live(vmi)
    assert (live["reason"], live["message"]) == (
        "CPUModeLiveMigratable",
        f'the node "{NODE}" does not allow migration with host-model',
    )
    live, _, _ = _live(vmi, MigratabilityFacts(host_cpu_model="Skylake-Client-IBRS"))
    assert live["status"] == "True"


def test_an_equal_condition_keeps_its_timestamps() -> None:
    # The API server dropped the nulls it was sent: the same condition, not a change to write again.
    stored: JSON = {"conditions": [{"type": "LiveMigratable", "status": "True"}]}
    before = copy.deepcopy(stored)
    status_conditions.set_condition(
        stored,
        {"type": "LiveMigratable", "status": "True", "lastProbeTime": None, "lastTransitionTime": None},
    )
    assert stored == before
    status_conditions.set_condition(
        stored, {"type": "LiveMigratable", "status": "False", "reason": "NotMigratable"}
    )
    assert stored["conditions"] == [{"type": "LiveMigratable", "status": "False", "reason": "NotMigratable"}]


def test_paused_reasons_and_unknown_pauses() -> None:
    for reason, expected in (("User", "PausedByUser"), ("IOError", "PausedIOError")):
        status: JSON = {}
        vmi_status.update_paused(status, _domain("Paused", reason), _now)
        (condition,) = status["conditions"]
        assert condition["reason"] == expected
        assert condition["lastTransitionTime"] == NOW
    status = {}
    vmi_status.update_paused(status, _domain("Paused", "Migration"), _now)  # not a migration it runs
    assert "conditions" not in status
    status = {"migrationState": {"mode": "Paused"}}
    vmi_status.update_paused(status, _domain("Paused", "Migration"), _now)
    assert status["conditions"][0]["reason"] == "PausedByMigrationMonitor"


def test_libvirt_memory_units() -> None:
    assert libvirt_quantity(131072, "KiB") == "128Mi"
    assert libvirt_quantity(1, "GiB") == "1Gi"
    assert libvirt_quantity(1000, "b") == "1k"  # below 1Ki a binary quantity prints as decimal
    assert libvirt_quantity(500, "bytes") == "500"
    assert libvirt_quantity(3, "parsec") is None


def test_guest_memory_with_virtio_mem_is_the_boot_memory_and_what_the_device_plugged() -> None:
    domain = _domain("Running", "Unknown")
    domain["Spec"]["CurrentMemory"] = {"Value": 1048576, "Unit": "KiB"}
    status: JSON = {"memory": {"guestAtBoot": "1Gi"}}
    vmi_status.update_memory(status, domain)
    assert status["memory"] == {"guestAtBoot": "1Gi", "guestCurrent": "1Gi"}  # no device: libvirt's
    target = {"Current": {"Value": 524288, "Unit": "KiB"}, "Requested": {"Value": 1048576, "Unit": "KiB"}}
    domain["Spec"]["Devices"]["Memory"] = {"Model": "virtio-mem", "Target": target}
    vmi_status.update_memory(status, domain)
    assert status["memory"]["guestCurrent"] == "1536Mi"  # half the requested gigabyte plugged so far
    target["Current"] = {"Value": 1073741824, "Unit": "b"}
    vmi_status.update_memory(status, domain)
    assert status["memory"]["guestCurrent"] == "2Gi"
    # without the boot memory to add to, libvirt's current memory stands
    status = {}
    vmi_status.update_memory(status, domain)
    assert status["memory"] == {"guestCurrent": "1Gi"}


def test_freeze_status_follows_the_domain() -> None:
    status: JSON = {}
    domain = _domain("Running", "Unpaused")
    domain["Status"]["FSFreezeStatus"] = {"Status": "frozen"}
    vmi_status.update_fs_freeze(status, domain)
    assert status["fsFreezeStatus"] == "frozen"
    domain["Status"]["FSFreezeStatus"] = {"Status": "thawed"}
    vmi_status.update_fs_freeze(status, domain)
    assert "fsFreezeStatus" not in status


def test_the_controller_records_the_domain_changes_it_sees(pods_dir: Path) -> None:
    harness = _harness(pods_dir, _masquerade_vmi(), _rich_domain())
    log = DomainEventLog(now=lambda: NOW)
    harness.controller._domain_events = log
    harness.start()
    uid = harness.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")["metadata"]["uid"]
    first = log.last(uid)
    assert first is not None
    assert (first.type, first.status) == ("Added", "Running")
    assert harness.launcher.domain is not None
    harness.launcher.domain["Status"].update(Status="Paused", Reason="User")
    harness.reconcile()
    paused = log.last(uid)
    assert paused is not None
    assert (paused.type, paused.status, paused.reason) == ("Modified", "Paused", "User")


def test_a_running_vmi_is_read_again_after_the_resync_period(pods_dir: Path) -> None:
    harness = _harness(pods_dir, _masquerade_vmi(), _rich_domain())
    harness.reconcile()
    with pytest.raises(RequeueAfter) as caught:
        harness.controller.reconcile("default/tiny")
    assert caught.value.seconds == RUNNING_RESYNC_SECONDS


def test_a_lifecycle_command_asks_for_the_status_to_follow(pods_dir: Path) -> None:
    changed: list[str] = []
    launcher = DomainLauncher(_rich_domain())
    vmi = _masquerade_vmi()
    store = Store[JSON]()
    store.upsert(vmi)
    handler = LifecycleHandler(
        store, LauncherLocator(pods_dir, NODE, connect=lambda _p: launcher), RecordedEvents(), changed.append
    )
    assert handler.put("pause", "default", "tiny", b"") == 202
    assert changed == ["default/tiny"]


def test_a_volume_without_a_disk_in_the_domain_keeps_an_empty_target() -> None:
    # The CRD requires target on every entry: KubeVirt writes "" until the domain has the disk.
    status: JSON = {"volumeStatus": [{"name": "data", "target": "vdb"}, {"name": "rootdisk"}]}
    vmi_status.update_volume_targets(status, None)
    assert status["volumeStatus"] == [{"name": "data", "target": ""}, {"name": "rootdisk", "target": ""}]


def test_selinux_context_is_none_without_selinux_and_left_alone_with_it(tmp_path: Path) -> None:
    status: dict[str, Any] = {}
    vmi_status.update_selinux_context(status, selinux_present=False)
    assert status == {"selinuxContext": "none"}
    kept = {"selinuxContext": "system_u:system_r:container_t:s0:c1,c2"}
    vmi_status.update_selinux_context(kept, selinux_present=True)
    assert kept == {"selinuxContext": "system_u:system_r:container_t:s0:c1,c2"}
    assert vmi_status.selinux_present(tmp_path) is False
    (tmp_path / "enforce").write_text("1")
    assert vmi_status.selinux_present(tmp_path) is True
