"""The launcher's pure pieces: metadata in the domain, VMI facts, options, names and versions."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import libvirt
import pytest
from lxml import etree

from kubevirt.handler_launcher_com.cmd.client import LauncherClient, LauncherClientError
from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.handler_launcher_com.sockets import (
    cmd_socket_path,
    init_socket_path,
    migration_source_socket,
    notify_socket_path,
)
from kubevirt.handler_launcher_com.versions import NoCommonVersionError, highest_common_version
from kubevirt.service.durations import parse_duration
from kubevirt.virt_launcher.app import LauncherConfig
from kubevirt.virt_launcher.events import ADDED, MODIFIED, event_type_for
from kubevirt.virt_launcher.libvirtd import Libvirtd, LibvirtdError
from kubevirt.virt_launcher.virtwrap import api, states
from kubevirt.virt_launcher.virtwrap.domain_json import (
    gone_domain_json,
    metadata_from_domain_xml,
    split_domain_name,
)
from kubevirt.virt_launcher.virtwrap.errors import InvalidRequestError
from kubevirt.virt_launcher.virtwrap.migration import MigrationOptions, parse_quantity
from kubevirt.virt_launcher.virtwrap.node import kvm_usable
from kubevirt.virt_launcher.virtwrap.timestamps import format_time
from kubevirt.virt_launcher.virtwrap.vmi import InvalidVMIError, read_vmi, vmi_facts

STAMP = datetime(2026, 11, 30, 12, 0, 1, 250000, tzinfo=UTC)


def test_metadata_round_trips_through_xml() -> None:
    metadata = api.KubeVirtMetadata(
        uid="u-1",
        grace_period=api.GracePeriodMetadata(
            deletion_grace_period_seconds=30,
            deletion_timestamp=format_time(STAMP),
            marked_for_graceful_shutdown=True,
        ),
        migration=api.MigrationMetadata(
            uid="m-1",
            start_timestamp=format_time(STAMP),
            end_timestamp=format_time(STAMP),
            failed=True,
            failure_reason="x",
            mode="PreCopy",
        ),
    )
    xml = metadata.to_xml()
    root = etree.fromstring(xml.encode())
    assert root.tag == "{http://kubevirt.io}kubevirt"
    assert root.findtext("{http://kubevirt.io}graceperiod/{http://kubevirt.io}deletionTimestamp") == (
        "2026-11-30T12:00:01.25Z"
    )
    assert root.find("{http://kubevirt.io}migration/{http://kubevirt.io}completed") is None  # omitempty
    assert api.KubeVirtMetadata.from_xml(xml) == metadata


def test_metadata_is_found_in_a_domain() -> None:
    xml = (
        '<domain type="qemu"><name>ns_vm</name><metadata>'
        '<kubevirt:kubevirt xmlns:kubevirt="http://kubevirt.io"><kubevirt:uid>abc</kubevirt:uid>'
        "</kubevirt:kubevirt></metadata></domain>"
    )
    assert metadata_from_domain_xml(xml).uid == "abc"
    assert metadata_from_domain_xml("<domain><name>x</name></domain>") == api.KubeVirtMetadata()


def test_gone_domain_carries_deletion_timestamp_and_reason() -> None:
    domain = gone_domain_json("ns_vm", "u-1", STAMP)
    assert (domain["kind"], domain["apiVersion"]) == ("Domain", "1.2.2")
    assert domain["ObjectMeta"] == {
        "name": "vm",
        "namespace": "ns",
        "uid": "u-1",
        "creationTimestamp": None,
        "deletionTimestamp": "2026-11-30T12:00:01Z",
    }
    assert (domain["Status"]["Status"], domain["Status"]["Reason"]) == ("NoState", "NonExistent")
    assert domain["Status"]["Interfaces"] is None
    assert domain["Status"]["FSFreezeStatus"] == {"Status": ""}
    # Go's zero DomainSpec around the UID: empty strings, zero numbers, nulls, zero structs.
    spec = domain["Spec"]
    assert spec["Metadata"]["KubeVirt"] == {
        "UID": "u-1",
        "GracePeriod": None,
        "Migration": None,
        "AccessCredential": None,
        "MemoryDump": None,
    }
    assert (spec["Name"], spec["UUID"], spec["XMLName"]) == ("", "", {"Space": "", "Local": ""})
    assert spec["Memory"] == {"Value": 0, "Unit": ""}
    assert spec["Devices"]["Disks"] is None
    assert spec["CurrentMemory"] is None
    assert split_domain_name("a_b_c") == ("a", "b_c")
    assert split_domain_name("lonely") == ("default", "lonely")


def test_vmi_facts() -> None:
    facts = vmi_facts(
        {
            "metadata": {"name": "vm", "uid": "u"},
            "spec": {"startStrategy": "Paused"},
            "status": {"phase": "Running", "migrationState": {"migrationUid": "m"}},
        }
    )
    assert facts.domain_name == "default_vm"
    assert facts.start_paused
    assert facts.grace_period_seconds == 30
    assert facts.running_or_final
    assert facts.migration_uid == "m"
    with pytest.raises(InvalidVMIError, match=r"status.migrationState: must be an object"):
        vmi_facts({"metadata": {"name": "vm"}, "status": {"migrationState": "x"}})
    with pytest.raises(InvalidVMIError, match=r"malformed VMI JSON"):
        read_vmi(b"\xff\xfe")
    raw = b'{"metadata": {"name": "vm"}, "status": {"migrationState": {"targetPod": "p"}}}'
    read = read_vmi(raw)
    assert (read.raw, read.migration_target_pod) == (raw, "p")


def test_migration_options_from_virt_handler_json() -> None:
    options = MigrationOptions.from_json(
        b'{"Bandwidth": "64Mi", "ProgressTimeout": 10, "CompletionTimeoutPerGiB": 20, "AllowPostCopy": true,'
        b' "AllowAutoConverge": true, "UnsafeMigration": true, "ParallelMigrationThreads": 4}'
    )
    assert options.bandwidth_bytes == 64 * 2**20
    assert options.progress_timeout == 10
    assert options.completion_timeout_per_gib == 20
    for flag in (
        libvirt.VIR_MIGRATE_LIVE,
        libvirt.VIR_MIGRATE_PEER2PEER,
        libvirt.VIR_MIGRATE_PERSIST_DEST,
        libvirt.VIR_MIGRATE_POSTCOPY,
        libvirt.VIR_MIGRATE_AUTO_CONVERGE,
        libvirt.VIR_MIGRATE_UNSAFE,
        libvirt.VIR_MIGRATE_PARALLEL,
    ):
        assert options.flags & flag
    assert MigrationOptions.from_json(b"").flags & libvirt.VIR_MIGRATE_POSTCOPY == 0
    with pytest.raises(InvalidRequestError, match=r"options.ProgressTimeout: must be a non-negative integer"):
        MigrationOptions.from_json(b'{"ProgressTimeout": -1}')
    with pytest.raises(InvalidRequestError, match=r"must be a JSON object"):
        MigrationOptions.from_json(b"[]")


@pytest.mark.parametrize(
    ("text", "expected"), [("0", 0), ("1Ki", 1024), ("1.5M", 1_500_000), ("2Gi", 2 * 2**30)]
)
def test_quantities(text: str, expected: int) -> None:
    assert parse_quantity(text, "f") == expected


@pytest.mark.parametrize(("text", "seconds"), [("3m", 180.0), ("240s", 240.0), ("1m30s", 90.0), ("45", 45.0)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "3 minutes", "m", "1x"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_states_and_reasons() -> None:
    assert states.state_name(libvirt.VIR_DOMAIN_PAUSED) == "Paused"
    assert states.reason_name(libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_PAUSED_USER) == "User"
    assert states.reason_name(libvirt.VIR_DOMAIN_SHUTOFF, libvirt.VIR_DOMAIN_SHUTOFF_MIGRATED) == "Migrated"
    assert states.reason_name(libvirt.VIR_DOMAIN_CRASHED, libvirt.VIR_DOMAIN_CRASHED_PANICKED) == "Panicked"
    assert states.reason_name(libvirt.VIR_DOMAIN_SHUTOFF, libvirt.VIR_DOMAIN_SHUTOFF_UNKNOWN) == "Unknown"
    assert states.reason_name(libvirt.VIR_DOMAIN_SHUTOFF, 999) == ""  # Go's zero value: not in its table
    # KubeVirt translates no reason of a running domain.
    assert states.reason_name(libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_RUNNING_BOOTED) == "Unknown"
    assert states.reason_name(libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_RUNNING_MIGRATED) == "Unknown"
    assert states.state_name(libvirt.VIR_DOMAIN_SHUTDOWN) == "ShuttingDown"


def test_event_types() -> None:
    assert event_type_for(libvirt.VIR_DOMAIN_EVENT_DEFINED, libvirt.VIR_DOMAIN_EVENT_DEFINED_ADDED) == ADDED
    assert (
        event_type_for(libvirt.VIR_DOMAIN_EVENT_STARTED, libvirt.VIR_DOMAIN_EVENT_STARTED_MIGRATED) == ADDED
    )
    assert (
        event_type_for(libvirt.VIR_DOMAIN_EVENT_STARTED, libvirt.VIR_DOMAIN_EVENT_STARTED_BOOTED) == MODIFIED
    )
    assert (
        event_type_for(libvirt.VIR_DOMAIN_EVENT_DEFINED, libvirt.VIR_DOMAIN_EVENT_DEFINED_UPDATED) == MODIFIED
    )


def test_socket_paths(tmp_path: Path) -> None:
    assert init_socket_path(tmp_path) == tmp_path / "sockets" / "launcher-init-sock"
    assert cmd_socket_path(tmp_path) == tmp_path / "sockets" / "launcher-sock"
    assert notify_socket_path(tmp_path) == tmp_path / "domain-notify-pipe.sock"
    (tmp_path / "domain-notify.sock").touch()
    assert notify_socket_path(tmp_path) == tmp_path / "domain-notify.sock"
    assert migration_source_socket(tmp_path, "u-49152") == tmp_path / "migrationproxy" / "u-49152-source.sock"


def test_version_negotiation() -> None:
    assert highest_common_version([1, 2], [2, 3]) == 2
    with pytest.raises(NoCommonVersionError, match=r"we support \[1\], the peer \[2\]"):
        highest_common_version([1], [2])


class _ReplyingStub:
    """Stands in for the Cmd stub: every query answers with the given payload."""

    def __init__(self, payload: str) -> None:
        self.payload = payload

    def GetDomain(self, request: object, timeout: float) -> cmd_pb2.DomainResponse:  # noqa: N802
        return cmd_pb2.DomainResponse(response=cmd_pb2.Response(success=True), domain=self.payload)

    def GetDomainStats(self, request: object, timeout: float) -> cmd_pb2.DomainStatsResponse:  # noqa: N802
        return cmd_pb2.DomainStatsResponse(response=cmd_pb2.Response(success=True), domainStats=self.payload)

    def GetGuestInfo(self, request: object, timeout: float) -> cmd_pb2.GuestInfoResponse:  # noqa: N802
        return cmd_pb2.GuestInfoResponse(
            response=cmd_pb2.Response(success=True), guestInfoResponse=self.payload
        )


@pytest.mark.parametrize(
    ("payload", "message"),
    [("{not json", "malformed JSON from the launcher"), ("[1, 2]", "the launcher sent list, not an object")],
)
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("get_domain", "GetDomain: domain"),
        ("get_domain_stats", "GetDomainStats: domainStats"),
        ("get_guest_info", "GetGuestInfo: guestInfoResponse"),
    ],
)
def test_client_reports_a_launchers_bad_json_as_a_client_error(
    tmp_path: Path, payload: str, message: str, query: str, field: str
) -> None:
    with LauncherClient(tmp_path / "sock") as client:
        client._stub = _ReplyingStub(payload)  # type: ignore[assignment]
        with pytest.raises(LauncherClientError, match=f"^{field}: {message}"):
            getattr(client, query)()
        client._stub = _ReplyingStub('{"Spec": {}}')  # type: ignore[assignment]
        assert getattr(client, query)() == {"Spec": {}}


def test_emulation_is_used_when_forced_or_allowed_without_kvm() -> None:
    def config(**flags: bool) -> LauncherConfig:
        return LauncherConfig(name="n", namespace="ns", uid="u", **flags)

    assert config(force_emulation=True).use_emulation
    assert not config().use_emulation  # neither allowed nor forced: KVM or nothing
    assert config(allow_emulation=True).use_emulation == (not kvm_usable())


@pytest.mark.parametrize(
    "filters", ['1:qemu" log_outputs = "1:file:/tmp/x', "1:qemu\nhost_uuid = 1", "1:a\\"]
)
def test_libvirtd_log_filters_cannot_break_out_of_their_config_string(tmp_path: Path, filters: str) -> None:
    daemon = Libvirtd(tmp_path / "rt", log_filters=filters)
    with pytest.raises(LibvirtdError, match="quotes, backslashes and newlines are not allowed"):
        daemon.start()
    assert daemon.process is None  # refused before anything was started
    assert not (tmp_path / "rt" / "etc" / "libvirtd.conf").exists()
