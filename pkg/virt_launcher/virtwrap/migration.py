"""Live migration of this launcher's domain (source side) and preparation of an incoming one (target side).

The source libvirt connects peer-to-peer to the target's libvirt through virt-handler's migration proxy
(``<share>/migrationproxy/<vmi uid>-source.sock``) and sends the guest's memory through the proxy for the
direct migration port (``<vmi uid>-49152-source.sock``); a block migration (node-local disks, see
``migration_disks``) copies them through the block migration port's (``<vmi uid>-49153-source.sock``),
where the target libvirt serves them over NBD. A monitor thread watches the job: no progress for
``ProgressTimeout`` seconds, or a run longer than ``CompletionTimeoutPerGiB`` x guest memory, switches to
post-copy when allowed and otherwise aborts. Outcomes are written to the domain's KubeVirt metadata, which
reaches virt-handler with the next domain event.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import threading
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import libvirt

from kubevirt.handler_launcher_com.sockets import migration_source_socket
from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT
from kubevirt.virt_launcher.virtwrap import api
from kubevirt.virt_launcher.virtwrap.errors import InvalidRequestError, ManagerError, WrongStateError
from kubevirt.virt_launcher.virtwrap.manager import DomainManager, libvirt_errors
from kubevirt.virt_launcher.virtwrap.migration_disks import disks_to_copy, is_block_migration
from kubevirt.virt_launcher.virtwrap.timestamps import format_time, now
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts

DIRECT_MIGRATION_PORT = 49152
BLOCK_MIGRATION_PORT = 49153
MODE_PRE_COPY = "PreCopy"
MODE_POST_COPY = "PostCopy"
ABORT_SUCCEEDED = "Succeeded"
ABORT_FAILED = "Failed"


def parse_quantity(value: object, field: str) -> int:
    """A Kubernetes quantity (``64Mi``, ``1G``, ``0``) in bytes."""
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    # Imported here: the typed API is heavy and a launcher needs it only when asked to migrate.
    from kubevirt_api.resource import Quantity

    try:
        return Quantity(str(value)).value()
    except ValueError as err:
        raise InvalidRequestError(f"{field}: not a quantity: {value!r}") from err


@dataclasses.dataclass(frozen=True)
class MigrationOptions:
    """The JSON ``options`` of a MigrationRequest (Go field names, as virt-handler sends them)."""

    bandwidth_bytes: int = 0
    progress_timeout: int = 150
    completion_timeout_per_gib: int = 150
    unsafe: bool = False
    allow_auto_converge: bool = False
    allow_post_copy: bool = False
    parallel_threads: int | None = None
    allow_workload_disruption: bool = False

    @classmethod
    def from_json(cls, raw: bytes) -> MigrationOptions:
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as err:
            raise InvalidRequestError(f"options: malformed migration options JSON: {err}") from err
        if not isinstance(data, dict):
            raise InvalidRequestError("options: the migration options must be a JSON object")
        return cls(
            bandwidth_bytes=parse_quantity(data.get("Bandwidth"), "options.Bandwidth"),
            progress_timeout=_int(data, "ProgressTimeout", cls.progress_timeout),
            completion_timeout_per_gib=_int(data, "CompletionTimeoutPerGiB", cls.completion_timeout_per_gib),
            unsafe=_bool(data, "UnsafeMigration"),
            allow_auto_converge=_bool(data, "AllowAutoConverge"),
            allow_post_copy=_bool(data, "AllowPostCopy"),
            parallel_threads=_int(data, "ParallelMigrationThreads", None),
            allow_workload_disruption=_bool(data, "AllowWorkloadDisruption"),
        )

    @property
    def flags(self) -> int:
        flags: int = (
            libvirt.VIR_MIGRATE_LIVE | libvirt.VIR_MIGRATE_PEER2PEER | libvirt.VIR_MIGRATE_PERSIST_DEST
        )
        if self.unsafe:
            flags |= libvirt.VIR_MIGRATE_UNSAFE
        if self.allow_auto_converge:
            flags |= libvirt.VIR_MIGRATE_AUTO_CONVERGE
        if self.allow_post_copy:
            flags |= libvirt.VIR_MIGRATE_POSTCOPY
        if self.parallel_threads:
            flags |= libvirt.VIR_MIGRATE_PARALLEL
        return flags


def completed_job_timings(dom: libvirt.virDomain) -> dict[str, int]:
    """libvirt's account of the migration just completed: the guest's downtime and the job's wall time
    (milliseconds), and what it sent; empty when libvirt has none (benchmarks read this log line)."""
    try:
        stats = dom.jobStats(libvirt.VIR_DOMAIN_JOB_STATS_COMPLETED)
    except libvirt.libvirtError:
        return {}
    wanted = {"downtime": "downtime_ms", "time_elapsed": "elapsed_ms", "memory_processed": "memory_bytes"}
    return {name: int(stats[key]) for key, name in wanted.items() if key in stats}


def _int(data: Mapping[str, Any], key: str, default: Any) -> Any:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidRequestError(f"options.{key}: must be a non-negative integer, got {value!r}")
    return value


def _bool(data: Mapping[str, Any], key: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise InvalidRequestError(f"options.{key}: must be a boolean, got {value!r}")
    return value


class Migrator:
    def __init__(self, manager: DomainManager, share_dir: Path, *, poll_interval: float = 0.2) -> None:
        self._manager = manager
        self._share_dir = share_dir
        self._poll = poll_interval
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()  # concurrent requests start one migration, not two
        self._abort_requested = threading.Event()
        self._abort_failed = threading.Event()
        self._non_root = False  # the migrating VMI's target runs libvirt in session mode
        self._log = get_logger(component=COMPONENT)

    @property
    def in_progress(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def destination_uri(self, vmi_uid: str, *, non_root: bool = False) -> str:
        """The target's libvirt through the proxy: a non-root VMI's target serves libvirt's session mode."""
        socket = urllib.parse.quote(str(migration_source_socket(self._share_dir, vmi_uid)))
        return f"qemu+unix:///{'session' if non_root else 'system'}?socket={socket}"

    def data_uri(self, vmi_uid: str, port: int = DIRECT_MIGRATION_PORT) -> str:
        key = f"{vmi_uid}-{port}"
        return f"unix://{migration_source_socket(self._share_dir, key)}"

    def prepare_target(self, facts: VMIFacts, options: Any = None) -> None:
        """Get this pod ready to receive the domain: it converts here, and the directory exists where the
        target libvirt and QEMU listen for the memory and disks the source's proxies forward."""
        self._manager.prepare_migration_target(facts, options)
        migration_source_socket(self._share_dir, facts.uid).parent.mkdir(mode=0o750, exist_ok=True)

    def migrate(self, facts: VMIFacts, options: MigrationOptions) -> None:
        if not facts.uid:
            raise InvalidRequestError("metadata.uid: required to locate the migration proxy")
        dom = self._manager.require_domain(facts)
        with self._starting:
            self._start(dom, facts, options)

    def _start(self, dom: libvirt.virDomain, facts: VMIFacts, options: MigrationOptions) -> None:
        if self.in_progress:
            return  # one migration at a time; a repeated request is not an error
        with libvirt_errors(f"reading the state of {facts.domain_name}"):
            state, _ = dom.state()
        if state not in (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_PAUSED):
            raise WrongStateError(f"domain {facts.domain_name} is not running: cannot migrate it")
        existing = self._manager.read_metadata(dom).migration
        if existing is not None and existing.uid == facts.migration_uid and existing.end_timestamp:
            return  # this migration already ran; its result is in the metadata
        started = format_time(now())

        def begin(metadata: api.KubeVirtMetadata) -> None:
            metadata.migration = api.MigrationMetadata(uid=facts.migration_uid, start_timestamp=started)

        copy = self._disks_to_copy(dom, facts)
        self._manager.update_metadata(dom, begin)
        self._abort_requested.clear()
        self._abort_failed.clear()
        self._non_root = facts.non_root  # one migration at a time: this one's
        self._thread = threading.Thread(
            target=contextvars.copy_context().run,
            args=(self._run, dom, facts.uid, options, copy),
            name="migration",
            daemon=True,
        )
        self._thread.start()

    def cancel(self, facts: VMIFacts) -> None:
        dom = self._manager.require_domain(facts)
        if not self.in_progress:
            raise WrongStateError(f"failed to cancel migration: domain {facts.domain_name} is not migrating")
        if self._abort_requested.is_set():
            return  # asked again (a status write lost to a conflict): the abort is under way
        # libvirt refuses metadata changes while the migration job runs: the abort outcome is recorded
        # with the migration's result when the job ends.
        self._abort_requested.set()
        try:
            dom.abortJob()
        except libvirt.libvirtError as err:
            self._abort_failed.set()
            raise WrongStateError(f"failed to cancel migration: {err.get_error_message()}") from err

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @staticmethod
    def _disks_to_copy(dom: libvirt.virDomain, facts: VMIFacts) -> list[str] | None:
        """The disks a block migration copies, or None when the VMI's disks are all shared."""
        vmi = facts.view.data
        if not is_block_migration(vmi):
            return None
        with libvirt_errors(f"reading the disks of {facts.domain_name}"):
            return disks_to_copy(dom.XMLDesc(0), vmi)

    def _run(
        self, dom: libvirt.virDomain, vmi_uid: str, options: MigrationOptions, copy: list[str] | None
    ) -> None:
        params: dict[str, Any] = {libvirt.VIR_MIGRATE_PARAM_URI: self.data_uri(vmi_uid)}
        flags = options.flags
        if copy is not None:
            flags |= libvirt.VIR_MIGRATE_NON_SHARED_INC
            if copy:
                params[libvirt.VIR_MIGRATE_PARAM_MIGRATE_DISKS] = copy
                params[libvirt.VIR_MIGRATE_PARAM_DISKS_URI] = self.data_uri(vmi_uid, BLOCK_MIGRATION_PORT)
        if options.bandwidth_bytes:
            params[libvirt.VIR_MIGRATE_PARAM_BANDWIDTH] = max(1, options.bandwidth_bytes // 2**20)
        if options.parallel_threads:
            params[libvirt.VIR_MIGRATE_PARAM_PARALLEL_CONNECTIONS] = options.parallel_threads
        mode = {"value": MODE_PRE_COPY}
        done = threading.Event()
        monitor = threading.Thread(
            target=contextvars.copy_context().run,
            args=(self._monitor, dom, options, mode, done),
            name="migration-monitor",
            daemon=True,
        )
        monitor.start()
        error = ""
        try:
            dom.migrateToURI3(self.destination_uri(vmi_uid, non_root=self._non_root), params, flags)
        except libvirt.libvirtError as err:
            error = err.get_error_message() or str(err)
        finally:
            done.set()
            monitor.join()
        finished = format_time(now())
        aborted = self._abort_requested.is_set()

        def record(metadata: api.KubeVirtMetadata) -> None:
            migration = metadata.migration or api.MigrationMetadata()
            migration.end_timestamp = finished
            migration.mode = mode["value"]
            if error:
                migration.failed = True
                migration.failure_reason = error
            else:
                migration.completed = True
            if aborted:
                succeeded = bool(error) and not self._abort_failed.is_set()
                migration.abort_status = ABORT_SUCCEEDED if succeeded else ABORT_FAILED
            metadata.migration = migration

        try:
            self._manager.update_metadata(dom, record)
        except ManagerError as err:  # e.g. the domain went away with the source libvirt
            self._log.error("cannot record the migration's outcome", reason=str(err))
        self._log.info(
            "migration finished",
            failed=bool(error),
            reason=error,
            mode=mode["value"],
            **({} if error else completed_job_timings(dom)),
        )

    def _monitor(
        self, dom: libvirt.virDomain, options: MigrationOptions, mode: dict[str, str], done: threading.Event
    ) -> None:
        started = time.monotonic()
        try:
            memory_gib = max(1.0, dom.info()[1] / 2**20)  # KiB -> GiB, at least one
        except libvirt.libvirtError:  # the timeouts are enforced all the same, sized for the minimum
            memory_gib = 1.0
        completion_deadline = started + options.completion_timeout_per_gib * memory_gib
        best_remaining = 0
        last_progress = started
        while not done.wait(self._poll):
            try:
                stats = dom.jobStats()
            except libvirt.libvirtError:
                continue
            remaining = int(stats.get("data_remaining", 0))
            now_ = time.monotonic()
            # Nothing left to send is not a mark to beat: a job still setting up reports 0.
            if not best_remaining or remaining < best_remaining:
                best_remaining, last_progress = remaining, now_
            stalled = options.progress_timeout and now_ - last_progress > options.progress_timeout
            too_long = now_ > completion_deadline
            if not (stalled or too_long) or mode["value"] == MODE_POST_COPY:
                continue
            if options.allow_post_copy:
                try:
                    dom.migrateStartPostCopy(0)
                    mode["value"] = MODE_POST_COPY
                    continue
                except libvirt.libvirtError as err:
                    self._log.warning("switching to post-copy failed", reason=err.get_error_message())
            self._log.warning("aborting migration", stalled=bool(stalled), timed_out=too_long)
            try:
                dom.abortJob()
            except libvirt.libvirtError as err:
                self._log.warning("aborting the migration failed", reason=err.get_error_message())
            return
