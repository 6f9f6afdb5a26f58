"""Every command of the launcher's gRPC server, over a real unix socket, against libvirt's test driver.

The converter is injected: a small one producing test-driver domains keeps these tests about the server
and the domain manager (the real converter is exercised by the real-guest tests).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import grpc
import libvirt
import pytest
from lxml import etree

from kubevirt.handler_launcher_com.cmd.client import CommandFailedError, LauncherClient
from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2, cmd_pb2_grpc
from kubevirt.handler_launcher_com.sockets import cmd_socket_path, notify_socket_path
from kubevirt.virt_launcher.events import DomainEventForwarder, start_event_loop
from kubevirt.virt_launcher.notify_client import NotifyClient
from kubevirt.virt_launcher.virtwrap.cmd_server.server import CommandServer, serve
from kubevirt.virt_launcher.virtwrap.domain_pipeline import convert_in_process
from kubevirt.virt_launcher.virtwrap.errors import LibvirtCallError
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.migration import MigrationOptions, Migrator
from kubevirt.virt_launcher.virtwrap.node import NodeFacts, accepts_slotless_max_memory
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts, read_vmi
from kubevirt_testing.driver_domain import driver_domain_xml

pytestmark = pytest.mark.timeout(60)


def facts(the_vmi: Mapping[str, Any]) -> VMIFacts:
    """The VMI as the launcher reads it from a request."""
    return read_vmi(json.dumps(the_vmi).encode())


def vmi(name: str = "testvm", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns1", "uid": f"uid-{name}"},
        "spec": {"terminationGracePeriodSeconds": 7, **spec},
        "status": {"phase": "Scheduled"},
    }


class Launcher:
    def __init__(self, share: Path, conn: libvirt.virConnect) -> None:
        self.cleanup_signals = 0
        self.manager = DomainManager(conn, driver_domain_xml)
        self.migrator = Migrator(self.manager, share)
        self.servicer = CommandServer(
            self.manager, self.migrator, pod_name="target-pod", on_target_cleanup=self._cleanup
        )
        self.server = serve(cmd_socket_path(share), self.servicer)
        self.client = LauncherClient(cmd_socket_path(share))
        self.stub = cmd_pb2_grpc.CmdStub(grpc.insecure_channel(f"unix://{cmd_socket_path(share)}"))

    def _cleanup(self) -> None:
        self.cleanup_signals += 1

    def raw(self, command: str, payload: bytes, options: bytes | None = None) -> Any:
        request: Any
        if options is not None:
            request = cmd_pb2.MigrationRequest(vmi=cmd_pb2.VMI(vmiJson=payload), options=options)
        else:
            request = cmd_pb2.VMIRequest(vmi=cmd_pb2.VMI(vmiJson=payload))
        return getattr(self.stub, command)(request, timeout=10)

    def failure(self, command: str, the_vmi: Mapping[str, Any]) -> str:
        with pytest.raises(CommandFailedError) as caught:
            self.client.vmi_command(command, the_vmi)
        return caught.value.reason

    def state(self) -> tuple[str, str]:
        domain = self.client.get_domain()
        assert domain is not None
        return domain["Status"]["Status"], domain["Status"]["Reason"]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[libvirt.virConnect]:
    start_event_loop()
    libvirt.registerErrorHandler(lambda *_: None, None)
    node = tmp_path / "node.xml"
    node.write_text("<node/>")  # a node of its own: fresh state for every test
    connection = libvirt.open(f"test://{node}")
    yield connection
    connection.close()


@pytest.fixture
def launcher(tmp_path: Path, conn: libvirt.virConnect) -> Iterator[Launcher]:
    result = Launcher(tmp_path, conn)
    yield result
    result.client.close()
    result.server.stop(grace=0)


def test_version_negotiation_and_ping(launcher: Launcher) -> None:
    assert launcher.client.negotiate_version() == 1
    launcher.client.ping()


def test_sync_defines_and_starts_once(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    domain = launcher.client.get_domain()
    assert domain is not None
    # GetDomain names no UID in ObjectMeta (KubeVirt's ListAllDomains leaves it empty).
    assert domain["ObjectMeta"] == {"name": "testvm", "namespace": "ns1", "creationTimestamp": None}
    assert domain["Spec"]["Name"] == "ns1_testvm"
    assert domain["Spec"]["Metadata"]["KubeVirt"] == {
        "UID": "uid-testvm",
        "GracePeriod": {
            "DeletionGracePeriodSeconds": 7,
            "DeletionTimestamp": None,
            "MarkedForGracefulShutdown": None,
        },
        "Migration": None,
        "AccessCredential": None,
        "MemoryDump": None,
    }
    assert (domain["Status"]["Status"], domain["Status"]["Reason"]) == ("Running", "Unknown")
    assert domain["Spec"]["Memory"] == {"Value": 131072, "Unit": "KiB"}
    assert domain["Spec"]["Devices"]["Interfaces"] is None
    assert domain["Spec"]["Devices"]["Disks"] is None
    launcher.client.sync_vmi(vmi())
    again = launcher.client.get_domain()
    assert again is not None
    assert again["Spec"]["UUID"] == domain["Spec"]["UUID"]
    assert len(launcher.manager.conn.listAllDomains()) == 1


def test_sync_updates_the_grace_period(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    launcher.client.sync_vmi(vmi(terminationGracePeriodSeconds=60))
    domain = launcher.client.get_domain()
    assert domain is not None
    assert domain["Spec"]["Metadata"]["KubeVirt"]["GracePeriod"]["DeletionGracePeriodSeconds"] == 60


def test_sync_does_not_restart_a_vmi_that_already_ran(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    launcher.client.vmi_command("KillVirtualMachine", vmi())
    ran = vmi()
    ran["status"]["phase"] = "Running"
    launcher.client.sync_vmi(ran)
    assert launcher.state() == ("Shutoff", "Destroyed")


def test_start_strategy_paused_is_kept_paused(launcher: Launcher) -> None:
    paused = vmi(startStrategy="Paused")
    launcher.client.sync_vmi(paused)
    assert launcher.state() == ("Paused", "User")
    launcher.client.sync_vmi(paused)
    assert launcher.state() == ("Paused", "User")
    launcher.client.vmi_command("UnpauseVirtualMachine", paused)
    assert launcher.state() == ("Running", "Unknown")


def test_sync_resumes_a_domain_not_paused_by_the_user(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    launcher.manager.conn.lookupByName("ns1_testvm").suspend()
    launcher.client.sync_vmi(vmi())
    assert launcher.state()[0] == "Running"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"{not json", "vmi: malformed VMI JSON"),
        (b"", "vmi: no VMI in the request"),
        (b"[1, 2]", "vmi: the VMI JSON must be an object"),
        (b'{"metadata": {"namespace": "x"}}', "metadata.name: required"),
        (b'{"metadata": {"name": 5}}', "metadata.name: must be a string"),
        (b'{"metadata": {"name": "a"}, "spec": []}', "spec: must be an object"),
        (
            b'{"metadata": {"name": "a"}, "spec": {"terminationGracePeriodSeconds": -1}}',
            "spec.terminationGracePeriodSeconds: must be at least 0, got -1",
        ),
        (
            b'{"metadata": {"name": "a"}, "spec": {"domain": {"memory": "bad"}}}',
            "converting the VMI to a domain: spec.domain.memory.guest: bad quantity",
        ),
        (
            b'{"metadata": {"name": "a"}, "spec": {"domain": {"explode": true}}}',
            "internal error: converter bug",
        ),
    ],
)
def test_bad_sync_requests_fail_with_a_message(launcher: Launcher, payload: bytes, message: str) -> None:
    reply = launcher.raw("SyncVirtualMachine", payload)
    assert reply.success is False
    assert message in reply.message
    launcher.client.ping()  # still serving


def _with_lun_on_a_file(facts: VMIFacts, options: Any, node: NodeFacts) -> str:
    """What the converter makes of a ``lun`` disk on a Filesystem claim: a LUN on its disk.img."""
    disk = (
        "<devices><disk type='file' device='lun'><driver name='qemu' type='raw'/>"
        "<source file='/var/run/kubevirt-private/vmi-disks/disk0/disk.img'/>"
        "<target dev='sda' bus='scsi'/></disk></devices></domain>"
    )
    return driver_domain_xml(facts, options, node).replace("</domain>", disk)


def test_a_definition_libvirt_refuses_fails_the_sync_in_kubevirts_words(
    tmp_path: Path, conn: libvirt.virConnect
) -> None:
    """KubeVirt's launcher returns the unwrapped libvirt error (``FormatLibvirtError``); virt-handler's
    SyncFailed event quotes it."""
    manager = DomainManager(conn, _with_lun_on_a_file)
    server = serve(
        cmd_socket_path(tmp_path), CommandServer(manager, Migrator(manager, tmp_path), pod_name="p")
    )
    client = LauncherClient(cmd_socket_path(tmp_path))
    try:
        with pytest.raises(CommandFailedError) as caught:
            client.sync_vmi(vmi())
    finally:
        client.close()
        server.stop(grace=0)
    reason = (
        "LibvirtError(Code=67, Domain=20, Message='unsupported configuration: "
        "disk device='lun' is only valid for block type disk source')"
    )
    assert caught.value.reason == reason
    assert str(caught.value) == (
        "server error. command SyncVMI failed: \"LibvirtError(Code=67, Domain=20, Message='unsupported "
        "configuration: disk device='lun' is only valid for block type disk source')\""
    )


@pytest.mark.parametrize(
    "command",
    [
        "PauseVirtualMachine",
        "UnpauseVirtualMachine",
        "SoftRebootVirtualMachine",
        "ResetVirtualMachine",
        "FinalizeVirtualMachineMigration",
        "HotplugHostDevices",
    ],
)
def test_commands_on_an_unknown_domain_fail(launcher: Launcher, command: str) -> None:
    assert launcher.failure(command, vmi("nosuchvm")) == "Domain not found."


@pytest.mark.parametrize(
    "command",
    ["ShutdownVirtualMachine", "KillVirtualMachine", "DeleteVirtualMachine"],
)
def test_stopping_an_absent_domain_succeeds(launcher: Launcher, command: str) -> None:
    launcher.client.vmi_command(command, vmi("nosuchvm"))  # raises CommandFailedError on failure
    assert launcher.client.get_domain() is None  # and nothing was created along the way


def test_pause_and_unpause(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    launcher.client.vmi_command("PauseVirtualMachine", vmi())
    assert launcher.state() == ("Paused", "User")
    launcher.client.vmi_command("PauseVirtualMachine", vmi())  # already paused: no-op
    launcher.client.vmi_command("UnpauseVirtualMachine", vmi())
    assert launcher.state() == ("Running", "Unknown")
    launcher.client.vmi_command("UnpauseVirtualMachine", vmi())  # already running: no-op


def test_shutdown_records_when_the_grace_period_started(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    launcher.client.vmi_command("ShutdownVirtualMachine", vmi())
    domain = launcher.client.get_domain()
    assert domain is not None
    grace = domain["Spec"]["Metadata"]["KubeVirt"]["GracePeriod"]
    assert grace["DeletionGracePeriodSeconds"] == 7
    assert grace["DeletionTimestamp"].endswith("Z")
    assert domain["Status"]["Status"] == "Shutoff"
    assert domain["Status"]["Reason"] == "Shutdown"
    launcher.client.vmi_command("ShutdownVirtualMachine", vmi())  # already off: no-op


def test_kill_then_delete(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    launcher.client.vmi_command("KillVirtualMachine", vmi())
    assert launcher.state() == ("Shutoff", "Destroyed")
    launcher.client.vmi_command("DeleteVirtualMachine", vmi())
    assert launcher.client.get_domain() is None


def test_soft_reboot_and_reset(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    launcher.client.vmi_command("SoftRebootVirtualMachine", vmi())
    launcher.client.vmi_command("ResetVirtualMachine", vmi())
    assert launcher.state()[0] == "Running"
    launcher.client.vmi_command("KillVirtualMachine", vmi())
    assert "only a running domain reboots" in launcher.failure("SoftRebootVirtualMachine", vmi())
    assert "only a running domain resets" in launcher.failure("ResetVirtualMachine", vmi())


def test_soft_reboot_needs_acpi_or_an_agent(launcher: Launcher) -> None:
    no_acpi = vmi("noacpi", domain={"noACPI": True})
    launcher.client.sync_vmi(no_acpi)
    failure = launcher.failure("SoftRebootVirtualMachine", no_acpi)
    assert "VMI neither have the agent connected nor the ACPI feature enabled" in failure


def test_queries_without_a_domain(launcher: Launcher) -> None:
    assert launcher.client.get_domain() is None
    assert launcher.client.get_domain_stats() is None
    # KubeVirt's empty guest info before any agent report: the zero values as Go writes them.
    assert launcher.client.get_guest_info() == {"os": {}, "timezone": ", 0", "fsInfo": {"disks": None}}


def test_queries_with_a_domain(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    stats = launcher.client.get_domain_stats()
    assert stats is not None
    assert stats["Name"] == "ns1_testvm"
    assert stats["NrVirtCpu"] == 1
    # No balloon device here: libvirt reports no balloon size, only the domain's memory.
    assert (stats["Memory"]["TotalSet"], stats["Memory"]["Total"]) == (True, 131072)
    empty = cmd_pb2.EmptyRequest()
    assert json.loads(launcher.stub.GetUsers(empty).guestUserListResponse) == []
    assert json.loads(launcher.stub.GetFilesystems(empty).guestFilesystemsResponse) == []
    version = launcher.stub.GetQemuVersion(empty)
    assert version.response.success
    assert version.version.count(".") == 2


def test_guest_agent_commands_report_the_missing_agent(launcher: Launcher) -> None:
    """libvirt's test driver has no agent: each command fails with libvirt's own reason, as KubeVirt's do."""
    launcher.client.sync_vmi(vmi())
    payload = cmd_pb2.VMI(vmiJson=json.dumps(vmi()).encode())
    freeze = launcher.stub.FreezeVirtualMachine(cmd_pb2.FreezeRequest(vmi=payload, unfreezeTimeoutSeconds=5))
    assert freeze.success is False
    assert freeze.message.startswith("LibvirtError(Code=")
    for call in (
        lambda: launcher.stub.Exec(cmd_pb2.ExecRequest(domainName="ns1_testvm", Command="true")),
        lambda: launcher.stub.GuestPing(cmd_pb2.GuestPingRequest(domainName="ns1_testvm")),
    ):
        with pytest.raises(grpc.RpcError) as failed:
            call()
        assert failed.value.code() == grpc.StatusCode.UNKNOWN
        assert "virError(" in str(failed.value.details())


def test_unsupported_features_say_so(launcher: Launcher) -> None:
    payload = cmd_pb2.VMIRequest(vmi=cmd_pb2.VMI(vmiJson=json.dumps(vmi()).encode()))
    empty = cmd_pb2.EmptyRequest()
    replies = [
        launcher.stub.VirtualMachineMemoryDump(cmd_pb2.MemoryDumpRequest(vmi=payload.vmi, dumpPath="/x")),
        launcher.stub.GetSEVInfo(empty).response,
        launcher.stub.GetLaunchMeasurement(payload).response,
        launcher.stub.InjectLaunchSecret(cmd_pb2.InjectLaunchSecretRequest(vmi=payload.vmi)),
        launcher.stub.GetDomainDirtyRateStats(empty).response,
        launcher.stub.GetScreenshot(payload).response,
    ]
    for reply in replies:
        assert reply.success is False
        assert "is not supported by this virt-launcher" in reply.message


def test_migration_requests(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    bad = launcher.raw("MigrateVirtualMachine", json.dumps(vmi()).encode(), b"{oops")
    assert bad.success is False
    assert "options: malformed migration options JSON" in bad.message
    wrong_type = launcher.raw(
        "MigrateVirtualMachine", json.dumps(vmi()).encode(), b'{"AllowPostCopy": "yes"}'
    )
    assert "options.AllowPostCopy: must be a boolean" in wrong_type.message
    bad_quantity = launcher.raw("MigrateVirtualMachine", json.dumps(vmi()).encode(), b'{"Bandwidth": "fast"}')
    assert "options.Bandwidth: not a quantity" in bad_quantity.message
    with pytest.raises(CommandFailedError, match=r"Domain not found\."):
        launcher.client.migrate_vmi(vmi("nosuchvm"), {})
    assert "is not migrating" in launcher.failure("CancelVirtualMachineMigration", vmi())

    # The test driver cannot migrate: the attempt ends as a recorded failure, not a crash.
    moving = vmi()
    moving["status"]["migrationState"] = {"migrationUid": "mig-1"}
    launcher.client.migrate_vmi(moving, {"Bandwidth": "64Mi", "AllowAutoConverge": True})
    launcher.migrator.wait(10)
    domain = launcher.client.get_domain()
    assert domain is not None
    migration = domain["Spec"]["Metadata"]["KubeVirt"]["Migration"]
    assert migration["UID"] == "mig-1"
    assert migration["Failed"] is True
    assert migration["FailureReason"]
    assert migration["Completed"] is False
    assert migration["StartTimestamp"].endswith("Z")
    assert migration["EndTimestamp"].endswith("Z")
    assert launcher.state()[0] == "Running"


def test_migration_target_preparation_and_release(launcher: Launcher) -> None:
    launcher.client.vmi_command("SyncMigrationTarget", vmi())
    assert launcher.client.get_domain() is None  # the source sends the domain; nothing is defined here
    bad = launcher.raw("SyncMigrationTarget", b"{nope")
    assert bad.success is False
    assert "malformed VMI JSON" in bad.message

    other = vmi()
    other["status"]["migrationState"] = {"targetPod": "another-pod"}
    launcher.client.vmi_command("SignalTargetPodCleanup", other)
    assert launcher.cleanup_signals == 0
    ours = vmi()
    ours["status"]["migrationState"] = {"targetPod": "target-pod"}
    launcher.client.vmi_command("SignalTargetPodCleanup", ours)
    assert launcher.cleanup_signals == 1


def test_domain_events_reach_the_notify_server(
    tmp_path: Path, conn: libvirt.virConnect, request: Any
) -> None:
    serve_notify = request.getfixturevalue("notify_server_factory")
    share = tmp_path / "share"
    share.mkdir()
    manager = DomainManager(conn, driver_domain_xml)
    # The handler is not there yet: events wait (retrying) until it appears.
    forwarder = DomainEventForwarder(manager, NotifyClient(notify_socket_path(share), give_up_after=20))
    notify_path = notify_socket_path(share)
    notify_path.touch()  # a stale socket file: the client must keep retrying through failures
    forwarder.start()
    try:
        manager.sync_vmi(facts(vmi()))
        time.sleep(0.5)
        notify_path.unlink()
        recorder = serve_notify(share)
        added = recorder.wait_for(lambda kind, domain: kind == "ADDED", 10)
        assert added[1]["Spec"]["Name"] == "ns1_testvm"
        assert added[1]["ObjectMeta"]["uid"] == "uid-testvm"  # events name the VMI UID
        recorder.wait_for(lambda kind, domain: domain["Status"]["Status"] == "Running", 10)
        manager.kill_vmi(facts(vmi()))
        manager.delete_vmi(facts(vmi()))
        final = recorder.wait_for(lambda kind, domain: "deletionTimestamp" in domain["ObjectMeta"], 10)
        assert final[0] == "MODIFIED"
        assert final[1]["Status"]["Reason"] == "NonExistent"
        assert final[1]["ObjectMeta"]["uid"] == "uid-testvm"
        assert final[1]["Spec"]["Metadata"]["KubeVirt"]["UID"] == "uid-testvm"
        assert forwarder.final_event_delivered.wait(5)
    finally:
        forwarder.stop()


def test_commands_are_served_concurrently(launcher: Launcher) -> None:
    launcher.client.sync_vmi(vmi())
    errors: list[BaseException] = []

    def query() -> None:
        try:
            for _ in range(20):
                assert launcher.client.get_domain() is not None
        except BaseException as err:  # collected for the assertion below
            errors.append(err)

    threads = [threading.Thread(target=query) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_memory_hotplug_room_gets_a_slot_where_libvirt_wants_one(conn: libvirt.virConnect) -> None:
    case = Path(__file__).parents[2] / "testdata/conformance/vmi/valid/003-memory-guest-only.defaults.json"
    the_vmi = facts(json.loads(case.read_text()))
    room = DomainManager(conn, convert_in_process, node=NodeFacts(emulation=True, slotless_max_memory=True))
    rendered = etree.fromstring(room.render_domain(the_vmi, None).encode())
    assert rendered.find("maxMemory").get("slots") == "0"  # type: ignore[union-attr]  # KubeVirt's virtio-mem room
    manager = DomainManager(conn, convert_in_process)  # asks libvirt whether it takes the room without slots
    manager.sync_vmi(the_vmi)
    domain = manager.get_domain()
    assert domain is not None
    assert domain["Status"]["Status"] == "Running"
    live = etree.fromstring(conn.lookupByName(domain["Spec"]["Name"]).XMLDesc(0).encode())
    ceiling = live.find("maxMemory")
    assert ceiling is not None  # the room for virtio-mem stays
    if not accepts_slotless_max_memory(conn.getLibVersion()):
        assert ceiling.get("slots") == "1"
        assert live.find("cpu/numa/cell") is not None  # the NUMA node libvirt wants with it


def test_events_of_other_domains_are_not_forwarded(conn: libvirt.virConnect) -> None:
    manager = DomainManager(conn, driver_domain_xml, own_domain="ns1_testvm")
    forwarder = DomainEventForwarder(manager, None)
    seen: list[tuple[str, str]] = []
    ours_running = threading.Event()

    def record(kind: str, domain: dict[str, Any]) -> None:
        seen.append((kind, domain["Spec"]["Name"]))
        if domain["Spec"]["Name"] == "ns1_testvm" and domain["Status"]["Status"] == "Running":
            ours_running.set()

    forwarder.add_listener(record)
    forwarder.start()
    try:
        manager.sync_vmi(facts(vmi("other")))  # a domain of another launcher on the same libvirt
        manager.kill_vmi(facts(vmi("other")))
        manager.delete_vmi(facts(vmi("other")))
        manager.sync_vmi(facts(vmi()))
        assert ours_running.wait(10)
        assert {name for _, name in seen} == {"ns1_testvm"}
        assert not forwarder.domain_gone.is_set()  # another domain's removal is not ours
    finally:
        forwarder.stop()


def test_concurrent_migration_requests_start_one_migration(tmp_path: Path, conn: libvirt.virConnect) -> None:
    class SlowToRecord(DomainManager):
        def update_metadata(self, dom: libvirt.virDomain, change: Any) -> None:
            time.sleep(0.3)  # widens the window between "nothing in progress" and the thread's start
            super().update_metadata(dom, change)

    runs: list[str] = []

    class CountingMigrator(Migrator):
        def _run(
            self, dom: libvirt.virDomain, vmi_uid: str, options: MigrationOptions, copy: list[str] | None
        ) -> None:
            runs.append(vmi_uid)
            time.sleep(0.5)  # still in progress when the second request is looked at
            super()._run(dom, vmi_uid, options, copy)

    manager = SlowToRecord(conn, driver_domain_xml)
    migrator = CountingMigrator(manager, tmp_path)
    manager.sync_vmi(facts(vmi()))
    moving = vmi()
    moving["status"]["migrationState"] = {"migrationUid": "mig-1"}
    requests = [
        threading.Thread(target=migrator.migrate, args=(facts(moving), MigrationOptions())) for _ in range(2)
    ]
    for thread in requests:
        thread.start()
    for thread in requests:
        thread.join()
    migrator.wait(10)
    assert runs == ["uid-testvm"]


class _MigratingDomain:
    """A domain whose migration job reports the given amounts of data left to send, one per poll."""

    def __init__(self, remaining: list[int]) -> None:
        self.remaining = remaining
        self.aborted = False

    def info(self) -> list[int]:
        return [1, 1 << 20, 1 << 20, 1, 0]

    def jobStats(self) -> dict[str, int]:  # noqa: N802 - libvirt's name
        return {"data_remaining": self.remaining.pop(0)} if self.remaining else {}

    def abortJob(self) -> None:  # noqa: N802 - libvirt's name
        self.aborted = True


class _MigratingDomainWithoutInfo(_MigratingDomain):
    def info(self) -> list[int]:
        raise libvirt.libvirtError("domain info unavailable")


@pytest.mark.parametrize("domain_type", [_MigratingDomain, _MigratingDomainWithoutInfo])
@pytest.mark.parametrize(
    ("remaining", "aborted"),
    [
        ([0, 0, *range(10_000, 0, -10)], False),  # set-up reports nothing left, then it sends steadily
        ([0, 0, *[5_000] * 1_000], True),  # set-up, then no progress at all
    ],
)
def test_only_a_migration_without_progress_is_aborted(
    tmp_path: Path, conn: libvirt.virConnect, remaining: list[int], aborted: bool, domain_type: Any
) -> None:
    migrator = Migrator(DomainManager(conn, driver_domain_xml), tmp_path, poll_interval=0.05)
    dom = domain_type(list(remaining))
    done = threading.Event()
    options = MigrationOptions(progress_timeout=1)
    monitor = threading.Thread(target=migrator._monitor, args=(dom, options, {"value": "PreCopy"}, done))
    monitor.start()
    monitor.join(1.6)  # past the progress timeout (a monitor that aborted has returned by then)
    done.set()
    monitor.join(5)
    assert dom.aborted is aborted


def test_a_migration_outcome_that_cannot_be_recorded_is_logged_not_raised(
    tmp_path: Path, conn: libvirt.virConnect, monkeypatch: pytest.MonkeyPatch
) -> None:
    class ForgetfulAfterStart(DomainManager):
        calls = 0

        def update_metadata(self, dom: libvirt.virDomain, change: Any) -> None:
            self.calls += 1
            if self.calls > 1:  # the start is recorded, the outcome cannot be
                raise LibvirtCallError("writing the domain metadata: domain is gone")
            super().update_metadata(dom, change)

    uncaught: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: uncaught.append(args.exc_value))
    manager = ForgetfulAfterStart(conn, driver_domain_xml)
    migrator = Migrator(manager, tmp_path)
    manager.sync_vmi(facts(vmi()))
    moving = vmi()
    moving["status"]["migrationState"] = {"migrationUid": "mig-1"}
    migrator.migrate(facts(moving), MigrationOptions())
    migrator.wait(10)
    assert manager.calls == 2
    assert uncaught == []
