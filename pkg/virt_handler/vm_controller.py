"""virt-handler's VM controller: for each VMI on this node, drive its launcher and report its domain.

A reconcile reads the VMI from the node's cache, finds the launcher's command socket through the pod
directories, and then does one of (KubeVirt's order): shut the domain down gracefully (VMI deleted, or
its pod told to stop) and kill it once the grace period is over; undefine a domain that stopped, or whose
VMI is final or deleted; or sync the VMI into the launcher (start it). The domain as read before acting
(one GetDomain per reconcile) is written back as the VMI's status (phase, node, interfaces, guest OS,
conditions, and ``Ready`` with the first Running, see :mod:`.ready`) with a resourceVersion-guarded
update, only when it changed. A launcher that is gone or that the watchdog marked unresponsive fails its
VMI. Before the first sync the VMI's containerDisks are mounted into its pod (once their containers are
up); the mounts go when the VMI is final, or deleted and its launcher gone. Hotplugged volumes are put
into the pod before each sync (a starting VMI waits for them) and taken out once they left the spec and
the domain (see :mod:`.hotplug_disk`); their ``volumeStatus`` phases follow (:mod:`.hotplug_disk.status`).
Before the first sync the missing ``DiskOrCreate`` images are made in the pod (see :mod:`.host_disks`),
and a non-root launcher's user is given its devices and disks (see :mod:`.pod_ownership`).

A domain a sync just started is thus reported by the next reconcile, which its launcher's domain event
queues. The launcher's client is kept per VMI across reconciles (see :mod:`.launcher_clients`), and
SyncVirtualMachine carries the options the cluster configuration decides (see :mod:`.vm_options`).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, EventSink, KubeApi
from kubevirt.client.errors import ConflictError, NotFoundError
from kubevirt.controller import RequeueAfter, Store, key_of, split_key
from kubevirt.handler_launcher_com.cmd.client import (
    CommandFailedError,
    LauncherClientError,
    LauncherDisconnectedError,
)
from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.log import get_logger
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_handler import phase as phases
from kubevirt.virt_handler import shutdown
from kubevirt.virt_handler.container_disk.mounter import ContainerDiskError, Mounter
from kubevirt.virt_handler.domain_events import DomainEventLog
from kubevirt.virt_handler.domain_notify import DomainNotify
from kubevirt.virt_handler.guest_agent import (
    AgentSupport,
    judge_guest_info,
    update_access_credentials,
    update_unsupported_agent,
)
from kubevirt.virt_handler.host_disks import HostDiskPreparationError, HostDisks
from kubevirt.virt_handler.hotplug_disk import status as hotplug_status
from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError
from kubevirt.virt_handler.hotplug_disk.mounter import (
    HotplugMounter,
    LauncherPod,
    domain_disk_names,
    volumes_to_keep,
)
from kubevirt.virt_handler.interface_status import domain_interfaces, merge_guest_agent
from kubevirt.virt_handler.launcher_clients import LauncherClients
from kubevirt.virt_handler.launcher_sockets import (
    SocketLookupError,
    find_launcher_socket,
    is_marked_unresponsive,
    pod_dir_exists,
    pod_uid_of,
)
from kubevirt.virt_handler.migratable import MigratabilityFacts
from kubevirt.virt_handler.migration import MigrationSource
from kubevirt.virt_handler.network import NetworkSetupError
from kubevirt.virt_handler.pod_ownership import PodOwnership, PodOwnershipError
from kubevirt.virt_handler.pod_sockets import launcher_socket_identity
from kubevirt.virt_handler.ready import set_ready_with_running
from kubevirt.virt_handler.status import agent_channel_connected, apply_domain
from kubevirt.virt_handler.vm_options import virtual_machine_options
from kubevirt_api.core.v1 import FINAL_VMI_PHASES, VirtualMachineInstancePhase
from kubevirt_api.view import JSON

SYNCHRONIZED = "Synchronized"
SYNC_FAILED_REASON = "Synchronizing with the Domain failed."
SOCKET_WAIT_SECONDS = 1.0
RESYNC_SECONDS = 5.0
# A running VMI's domain is read again this often: without domain events from the launcher, this is
# how a guest agent connecting or a pause the handler did not make reaches the status.
RUNNING_RESYNC_SECONDS = 30.0
# A launcher whose socket never appears within this time is unresponsive (KubeVirt's 3 minutes).
LAUNCHER_START_TIMEOUT_SECONDS = 180.0
# While a hotplugged volume has no disk in the domain yet, the VMI is looked at again this soon (KubeVirt's).
HOTPLUG_REFRESH_SECONDS = 1.0


class Network(Protocol):
    def setup(self, vmi: JSON, launcher_socket: Path) -> None: ...
    def interface_status(self, vmi: JSON, interfaces: list[JSON]) -> list[JSON]: ...
    def forget(self, uid: str) -> None: ...
    def forget_all_but(self, uids: list[str]) -> None: ...


class Launcher(Protocol):
    def sync_vmi(self, vmi: JSON, options: cmd_pb2.VirtualMachineOptions | None = None) -> None: ...
    def vmi_command(self, command: str, vmi: JSON) -> None: ...
    def get_domain(self) -> JSON | None: ...
    def get_guest_info(self) -> JSON: ...
    def close(self) -> None: ...


@dataclass
class _Outcome:
    """What driving the launcher left: the domain to report, an error, when to look again."""

    domain: JSON | None = None
    error: str | None = None
    requeue: float | None = None
    disconnected: bool = False
    # The call failed on the connection, not in the launcher: the next reconcile dials again.
    redial: bool = False
    # The hotplugged volumes in the launcher pod as this sync left them; None when it did not look.
    mounted: frozenset[str] | None = None
    # The connected guest agent's verdict; None when there is none or it was not asked.
    agent_support: AgentSupport | None = None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid_of(vmi: JSON, key: str) -> str:
    return str(vmi["metadata"].get("uid") or key)


def guest_os_info(domain: JSON) -> JSON:
    info = (domain.get("Status") or {}).get("OSInfo") or {}
    keys = {
        "Name": "name",
        "KernelRelease": "kernelRelease",
        "Version": "version",
        "PrettyName": "prettyName",
        "VersionId": "versionId",
        "KernelVersion": "kernelVersion",
        "Machine": "machine",
        "Id": "id",
    }
    return {ours: info[theirs] for theirs, ours in keys.items() if info.get(theirs)}


class VMController:
    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        vmi_store: Store[JSON],
        node: str,
        pods_dir: Path,
        connect: Callable[[Path], Launcher],
        clock: Callable[[], float] = time.monotonic,
        network: Network | None = None,
        migratability_facts: MigratabilityFacts | None = None,
        domain_events: DomainEventLog | None = None,
        migration_source: MigrationSource | None = None,
        mounter: Mounter | None = None,
        hotplug: HotplugMounter | None = None,
        notify: DomainNotify | None = None,
        ownership: PodOwnership | None = None,
        host_disks: HostDisks | None = None,
        config: Callable[[], ClusterConfig] = ClusterConfig,
        identify: Callable[[Path], Hashable] = launcher_socket_identity,
    ) -> None:
        self._api = api
        self._events = events
        self._vmis = vmi_store
        self._node = node
        self._pods_dir = pods_dir
        self._launchers = LauncherClients(connect, identify)
        self._config = config
        self._clock = clock
        self._network = network
        self._migratability_facts = migratability_facts or MigratabilityFacts()
        self._domain_events = domain_events or DomainEventLog()
        self._migration_source = migration_source
        self._mounter = mounter
        self._hotplug = hotplug
        self._notify = notify
        self._ownership = ownership
        self._host_disks = host_disks
        self._log = get_logger()
        self._lock = threading.Lock()
        # Per VMI UID: when we started waiting for its socket, and whether we ever reached it.
        self._waiting_since: dict[str, float] = {}
        self._reached: set[str] = set()
        # Per VMI UID: the last domain seen down, so a launcher that exits after a clean stop is not
        # taken for a crash.
        self._last_down: dict[str, JSON] = {}
        # Per VMI key: the resourceVersion our last status write replaced. While the cache still shows
        # it, the cache has not caught up with that write and a status computed from it is stale.
        self._replaced: dict[str, str] = {}
        # Per VMI key: the UID the state above is kept for, so a VMI created again under the same name
        # does not leave its predecessor's behind.
        self._uids: dict[str, str] = {}

    def reconcile(self, key: str) -> None:
        vmi = self._vmis.get_by_key(key)
        if vmi is None:
            # What its launcher still holds is the orphan sweeper's; its pod's network goes with the pod.
            if self._network is not None:
                self._network.forget_all_but([str(v["metadata"].get("uid")) for v in self._vmis.list()])
            # Our mounts into its pod are left: the kubelet cannot remove the pod's volumes while they stay.
            self._unmount_recorded(key, keep=None)
            if self._notify is not None:
                self._notify.forget(key)
            self._forget_all_but_known()
            return
        vmi = copy.deepcopy(vmi)
        # A VMI deleted and created again under the same name while its mounts were still there.
        self._unmount_recorded(key, keep=vmi["metadata"].get("uid"))
        status = vmi.setdefault("status", {})
        current = status.get("phase") or ""
        if current not in (
            VirtualMachineInstancePhase.SCHEDULED,
            VirtualMachineInstancePhase.RUNNING,
            *FINAL_VMI_PHASES,
        ):
            return
        uid = _uid_of(vmi, key)
        if (vmi["metadata"].get("labels") or {}).get("kubevirt.io/nodeName") != self._node:
            self._forget(uid, key)  # migrated away: it will reach no final phase here to be forgotten at
            return
        if self._migration_source is not None and self._migration_source.owns(vmi):
            self._migration_source.reconcile(vmi)  # the launcher is busy migrating: that role drives it
            return
        self._track(key, uid)
        final = current in FINAL_VMI_PHASES
        deleting = vmi["metadata"].get("deletionTimestamp") is not None
        if final and self._network is not None:
            self._network.forget(uid)
        if final:
            self._unmount(vmi["metadata"].get("uid") or "")
        try:
            socket = find_launcher_socket(self._pods_dir, status.get("activePods") or {}, self._node)
        except SocketLookupError:
            self._launchers.drop(uid)  # gone, or not one launcher any more: none to keep a client for
            if final or deleting:
                self._unmount(vmi["metadata"].get("uid") or "")
                self._forget(uid, key)
                return
            if self._launcher_gone(uid, status):
                self._fail_unresponsive(key, vmi, uid)
                return
            raise RequeueAfter(SOCKET_WAIT_SECONDS) from None
        with self._lock:
            self._reached.add(uid)
            self._waiting_since.pop(uid, None)
        if is_marked_unresponsive(self._pods_dir, pod_uid_of(self._pods_dir, socket)):
            self._launchers.drop(uid)
            if not (final or deleting):
                self._fail_unresponsive(key, vmi, uid)
            return
        if self._notify is not None and not final:
            self._notify.launcher_found(key, uid, socket)  # its domain events then enqueue the VMI
        network_error = None if (final or deleting) else self._network_error(vmi, socket)
        if network_error is not None:
            outcome = _Outcome(error=network_error)
        else:
            try:
                launcher = self._launchers.get(uid, socket)
            except (SocketLookupError, FileNotFoundError) as err:  # it changed since it was found: look again
                self._log.warning("refused a launcher socket", name=vmi["metadata"]["name"], reason=str(err))
                raise RequeueAfter(SOCKET_WAIT_SECONDS) from None
            try:
                outcome = self._drive(launcher, key, vmi, socket)
            except BaseException:
                self._launchers.drop(uid, launcher)  # in an unknown state: not to be used again
                raise
            if outcome.disconnected or outcome.redial:
                self._launchers.drop(uid, launcher)
        if final:
            self._forget(uid, key)
            return
        if outcome.disconnected:
            raise RequeueAfter(SOCKET_WAIT_SECONDS)  # the watchdog decides whether it is gone
        if outcome.domain is not None and not phases.domain_alive(outcome.domain):
            with self._lock:
                self._last_down[uid] = outcome.domain
        self._update_status(
            key, vmi, outcome.domain, outcome.error, mounted=outcome.mounted, agent=outcome.agent_support
        )
        if outcome.requeue is not None:
            raise RequeueAfter(outcome.requeue)
        if outcome.error is not None or vmi["status"].get("phase") != VirtualMachineInstancePhase.RUNNING:
            raise RequeueAfter(SOCKET_WAIT_SECONDS if outcome.error is None else RESYNC_SECONDS)
        raise RequeueAfter(RUNNING_RESYNC_SECONDS)

    def _network_error(self, vmi: JSON, socket: Path) -> str | None:
        """Phase 1 of the VMI's network before the launcher defines the domain; its failure, if any."""
        if self._network is None:
            return None
        try:
            self._network.setup(vmi, socket)
        except NetworkSetupError as err:
            self._events.event(vmi, "Warning", err.reason, err.message)
            return err.message
        return None

    def _launcher_gone(self, uid: str, status: JSON) -> bool:
        """KubeVirt's rule for a launcher without a socket: gone once it had one, once its pod
        directory vanished, or after waiting too long for it."""
        with self._lock:
            if uid in self._reached:
                return True
            since = self._waiting_since.setdefault(uid, self._clock())
        pods = [pod for pod, node in (status.get("activePods") or {}).items() if node == self._node]
        if not any(pod_dir_exists(self._pods_dir, pod) for pod in pods):
            return True
        return self._clock() - since > LAUNCHER_START_TIMEOUT_SECONDS

    def _fail_unresponsive(self, key: str, vmi: JSON, uid: str) -> None:
        with self._lock:
            last_down = self._last_down.get(uid)
        current = vmi["status"].get("phase") or ""
        grace = vmi["spec"].get("terminationGracePeriodSeconds")
        if (
            last_down is not None
            and phases.phase_from_domain(current, last_down, launcher_unresponsive=True, vmi_grace=grace)
            not in FINAL_VMI_PHASES
        ):
            last_down = None  # it says nothing final: a launcher gone mid-run failed its VMI
        self._log.warning("the launcher is gone or unresponsive", key=key, uid=uid)
        self._update_status(key, vmi, last_down, None, launcher_unresponsive=True)

    def _forget(self, uid: str, key: str) -> None:
        if self._notify is not None:
            self._notify.forget(key)
        with self._lock:
            self._drop(uid)
            self._replaced.pop(key, None)
            self._uids.pop(key, None)
        self._domain_events.forget(uid)
        self._launchers.drop(uid)

    def _drop(self, uid: str) -> None:
        """Drops what is kept for the VMI with ``uid`` (the lock held)."""
        self._waiting_since.pop(uid, None)
        self._reached.discard(uid)
        self._last_down.pop(uid, None)

    def _track(self, key: str, uid: str) -> None:
        """Records that ``key`` names the VMI with ``uid``; one it named before was deleted and created
        again meanwhile, and what is kept for that one goes."""
        with self._lock:
            previous = self._uids.get(key)
            self._uids[key] = uid
            if previous is None or previous == uid:
                return
            self._drop(previous)
        self._domain_events.forget(previous)
        self._launchers.drop(previous)

    def _forget_all_but_known(self) -> None:
        """Drops what is kept for every VMI the cache no longer holds: deleted, migrated away, or gone
        while the handler was not watching (a relist's tombstone), none with a final phase seen here."""
        with self._lock:  # the cache read inside it, so a worker's entry for a VMI just added stays
            known = self._vmis.list()
            keys = {key_of(vmi) for vmi in known}
            uids = {_uid_of(vmi, key_of(vmi)) for vmi in known}
            for uid in (self._waiting_since.keys() | self._reached | self._last_down.keys()) - uids:
                self._drop(uid)
            for key in (self._replaced.keys() | self._uids.keys()) - keys:
                self._replaced.pop(key, None)
                self._uids.pop(key, None)
            self._domain_events.forget_all_but(uids)
            self._launchers.drop_all_but(uids)

    def close(self) -> None:
        """Closes the launcher clients kept (the handler stopping)."""
        self._launchers.close()

    def _drive(self, launcher: Launcher, key: str, vmi: JSON, socket: Path) -> _Outcome:
        final = vmi["status"].get("phase") in FINAL_VMI_PHASES
        deleting = vmi["metadata"].get("deletionTimestamp") is not None
        try:
            # The only reading of this sync: what it acts on and reports (a domain the sync starts is
            # reported by the next reconcile, which the launcher's domain event queues).
            domain = launcher.get_domain()
        except LauncherDisconnectedError:
            return _Outcome(disconnected=True)
        except LauncherClientError as err:
            return self._failed(vmi, err)
        # Recorded as of now: an event the commands below cause must not be overwritten by it.
        self._domain_events.observe(_uid_of(vmi, key), domain)
        if self._notify is not None:
            self._notify.domain_read(key, domain)
        stopping = deleting or (
            shutdown.marked_for_graceful_shutdown(domain)
            and vmi["status"].get("phase") == VirtualMachineInstancePhase.RUNNING
        )
        try:
            if stopping and domain is not None and phases.domain_alive(domain):
                return self._shut_down(launcher, vmi, domain)
            if domain is not None and (final or deleting or not phases.domain_alive(domain)):
                launcher.vmi_command("DeleteVirtualMachine", vmi)
                self._events.event(vmi, "Normal", "Deleted", "Signaled Deletion")
                return _Outcome(domain)  # the phase comes from how the domain stopped
            if final or stopping:
                return _Outcome(domain)
            current = vmi["status"].get("phase") or ""
            grace = vmi["spec"].get("terminationGracePeriodSeconds")
            implied = phases.phase_from_domain(current, domain, launcher_unresponsive=False, vmi_grace=grace)
            if implied != current:
                # KubeVirt's rule: the phase catches up with the domain first (a domain just started, or a
                # Running VMI's domain gone), and only a VMI in step with its domain is synced.
                return _Outcome(domain)
            # The disks must be in the pod before the launcher builds the domain on them.
            if domain is None and self._mounter is not None and not self._mounter.mount(vmi, self._node):
                return _Outcome(requeue=SOCKET_WAIT_SECONDS)
            self._mount_hotplug(vmi, socket)
            if domain is None and not hotplug_status.hotplug_volumes_ready(vmi):
                # KubeVirt's rule: a VMI starting with hotplugged volumes is defined with them in its pod.
                return _Outcome(requeue=HOTPLUG_REFRESH_SECONDS, mounted=self._hotplug_mounted(vmi))
            if domain is None and self._host_disks is not None:
                # The DiskOrCreate images the domain is built on, made before they are given to the user.
                self._host_disks.prepare(vmi, socket)
            if domain is None and self._ownership is not None:
                # A non-root launcher opens its devices and disks as its own user.
                self._ownership.claim(vmi, socket)
            launcher.sync_vmi(vmi, virtual_machine_options(vmi, self._config()))
            if domain is None:
                self._events.event(vmi, "Normal", "Created", "VirtualMachineInstance defined.")
            elif self._hotplug is not None:
                # Volumes that left the spec go once the domain (as read before this sync) lost their disks.
                self._hotplug.unmount(vmi, volumes_to_keep(vmi, domain))
            support = self._agent_support(launcher, vmi, domain)
            return replace(self._synced(vmi, domain), agent_support=support)
        except LauncherDisconnectedError:
            # The launcher went away while stopping its domain: that is what stopping does.
            if stopping:
                return _Outcome(domain, requeue=SOCKET_WAIT_SECONDS, redial=True)
            return _Outcome(disconnected=True)
        except LauncherClientError as err:
            return self._failed(vmi, err)
        except ContainerDiskError as err:
            self._log.error("mounting container disks failed", name=vmi["metadata"]["name"], reason=str(err))
            self._events.event(vmi, "Warning", "SyncFailed", str(err))
            return _Outcome(error=str(err))
        except (HostDiskPreparationError, PodOwnershipError) as err:
            self._log.error(
                "preparing the launcher pod's disks and devices failed",
                name=vmi["metadata"]["name"],
                reason=str(err),
            )
            self._events.event(vmi, "Warning", "SyncFailed", str(err))
            return _Outcome(error=str(err))
        except HotplugVolumeError as err:
            # KubeVirt's handler fails the sync: the launcher is not synced until the volume is fixed or
            # removed from the spec. What is in place is still reported.
            self._log.error("hotplugged volumes failed", name=vmi["metadata"]["name"], reason=str(err))
            self._events.event(vmi, "Warning", "SyncFailed", str(err))
            return _Outcome(domain, error=str(err), mounted=self._hotplug_mounted(vmi))

    def _mount_hotplug(self, vmi: JSON, socket: Path) -> None:
        """Puts the VMI's hotplugged volumes into its launcher pod; a claim missing its image is a
        warning event (KubeVirt's ``HotplugFailed``), what is refused raises."""
        if self._hotplug is None:
            return
        pod = LauncherPod.of_socket(self._pods_dir, socket)
        for warning in self._hotplug.mount(vmi, pod):
            self._events.event(vmi, "Warning", hotplug_status.HOTPLUG_FAILED_REASON, warning)

    def _hotplug_mounted(self, vmi: JSON) -> frozenset[str] | None:
        if self._hotplug is None:
            return None
        try:
            return self._hotplug.mounted(vmi)
        except HotplugVolumeError as err:
            self._log.error("reading hotplug mounts failed", name=vmi["metadata"]["name"], reason=str(err))
            return None

    def _agent_support(self, launcher: Launcher, vmi: JSON, domain: JSON | None) -> AgentSupport | None:
        """What the connected agent offers, judged as KubeVirt does; None without an agent or an answer."""
        if not agent_channel_connected(domain):
            return None
        try:
            info = launcher.get_guest_info()
        except LauncherClientError as err:
            name = vmi["metadata"]["name"]
            self._log.info("cannot read the guest agent's info", name=name, reason=str(err))
            return None
        return judge_guest_info(vmi, info, self._config().supported_guest_agent_versions)

    def _synced(self, vmi: JSON, domain: JSON | None) -> _Outcome:
        """A synced VMI's outcome: while a hotplugged volume is not in the domain yet, look again soon."""
        if self._hotplug is None:
            return _Outcome(domain)
        refresh = hotplug_status.needs_refresh(vmi, domain_disk_names(domain))
        return _Outcome(
            domain,
            mounted=self._hotplug_mounted(vmi),
            requeue=HOTPLUG_REFRESH_SECONDS if refresh else None,
        )

    def _unmount(self, vmi_uid: str) -> None:
        if not vmi_uid:
            return
        try:
            if self._mounter is not None:
                self._mounter.unmount(vmi_uid)
            if self._hotplug is not None:
                self._hotplug.unmount_all(vmi_uid)
        except ContainerDiskError as err:
            self._log.error("unmounting container disks failed", vmi_uid=vmi_uid, reason=str(err))
            raise RequeueAfter(RESYNC_SECONDS) from None
        except HotplugVolumeError as err:
            self._log.error("unmounting hotplugged volumes failed", vmi_uid=vmi_uid, reason=str(err))
            raise RequeueAfter(RESYNC_SECONDS) from None

    def _unmount_recorded(self, key: str, *, keep: str | None) -> None:
        """Unmounts what is recorded for VMIs called ``key`` other than the one with UID ``keep``."""
        namespace, name = split_key(key)
        uids: set[str] = set()
        if self._mounter is not None:
            uids.update(self._mounter.recorded(namespace or "", name))
        if self._hotplug is not None:
            uids.update(self._hotplug.recorded(namespace or "", name))
        for uid in sorted(uids):
            if uid != keep:
                self._unmount(uid)

    def _shut_down(self, launcher: Launcher, vmi: JSON, domain: JSON) -> _Outcome:
        step = shutdown.next_step(vmi["spec"].get("terminationGracePeriodSeconds"), domain, datetime.now(UTC))
        if step.action is shutdown.Action.KILL:
            launcher.vmi_command(step.action.value, vmi)
            self._events.event(vmi, "Normal", "Deleted", "VirtualMachineInstance stopping")
            return _Outcome(domain, requeue=SOCKET_WAIT_SECONDS)
        if step.action is shutdown.Action.SHUTDOWN:
            launcher.vmi_command(step.action.value, vmi)
            self._events.event(vmi, "Normal", "ShuttingDown", "Signaled Graceful Shutdown")
        return _Outcome(domain, requeue=step.requeue_seconds)

    def _failed(self, vmi: JSON, err: LauncherClientError) -> _Outcome:
        self._log.error("syncing with the launcher failed", name=vmi["metadata"]["name"], reason=str(err))
        message = str(err)
        self._events.event(vmi, "Warning", "SyncFailed", message)
        # The launcher's own refusal leaves the connection sound; anything else (a deadline, a reply it
        # could not have meant) may not.
        return _Outcome(error=message, redial=not isinstance(err, CommandFailedError))

    def _update_status(
        self,
        key: str,
        vmi: JSON,
        domain: JSON | None,
        error: str | None,
        *,
        launcher_unresponsive: bool = False,
        mounted: frozenset[str] | None = None,
        agent: AgentSupport | None = None,
    ) -> None:
        original = copy.deepcopy(vmi["status"])
        status = vmi["status"]
        current = status.get("phase") or ""
        not_started = domain is None and current == VirtualMachineInstancePhase.SCHEDULED
        if (
            not_started
            and error is None
            and not launcher_unresponsive
            and not hotplug_status.would_change(vmi, mounted)
        ):
            # Not started as far as this sync saw: the write that reports the started domain (Running)
            # carries the derived fields too, so a start costs virt-handler one VMI write. A hotplugged
            # volume now in the pod is written at once: the start waits for it.
            return
        if domain is not None:
            interfaces = domain_interfaces(domain)
            if interfaces and self._network is not None:
                interfaces = self._network.interface_status(vmi, interfaces)
            if interfaces := merge_guest_agent(interfaces, domain, vmi):
                status["interfaces"] = interfaces
            if info := guest_os_info(domain):
                status["guestOSInfo"] = info
        status["nodeName"] = status.get("nodeName") or self._node
        apply_domain(vmi, domain, self._migratability_facts, _now)
        if synced := update_access_credentials(status, domain, _now):
            self._events.event(vmi, *synced)
        update_unsupported_agent(status, agent, _now)
        volume_events = hotplug_status.update_hotplug_volumes(vmi, mounted)
        if error is None or domain is not None:
            new_phase = phases.phase_from_domain(
                current,
                domain,
                launcher_unresponsive=launcher_unresponsive,
                vmi_grace=vmi["spec"].get("terminationGracePeriodSeconds"),
            )
        else:
            new_phase = current
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != SYNCHRONIZED]
        if error is not None:
            conditions.append(
                {
                    "type": SYNCHRONIZED,
                    "status": "False",
                    "reason": SYNC_FAILED_REASON,
                    "message": error,
                    "lastProbeTime": None,
                    "lastTransitionTime": _now(),
                }
            )
        status["conditions"] = conditions
        if new_phase != current:
            status["phase"] = new_phase
            stamps = status.setdefault("phaseTransitionTimestamps", [])
            stamps.append({"phase": new_phase, "phaseTransitionTimestamp": _now()})
            if new_phase == VirtualMachineInstancePhase.RUNNING:
                set_ready_with_running(vmi, _now())  # saves virt-controller's write of it (see .ready)
        if status == original:
            return
        version = str(vmi["metadata"].get("resourceVersion") or "")
        with self._lock:
            if self._replaced.get(key) == version:
                # Our own write is on its way to the cache; its watch event queues the VMI again.
                return
            self._replaced.pop(key, None)
        namespace, _ = split_key(key)
        try:
            # As KubeVirt's handler: an UPDATE of the whole VMI (no status subresource), conditional on
            # the resourceVersion it was computed from, so a status field it dropped goes too.
            body = {"apiVersion": VIRTUAL_MACHINE_INSTANCES.api_version, "kind": "VirtualMachineInstance"}
            self._api.update(VIRTUAL_MACHINE_INSTANCES, namespace, {**body, **vmi})
        except NotFoundError:
            return
        except ConflictError:
            raise RequeueAfter(0.1) from None
        with self._lock:
            self._replaced[key] = version
        if new_phase != current:
            self._phase_event(vmi, new_phase)
        for reason, message in volume_events:
            self._events.event(vmi, "Normal", reason, message)

    def _phase_event(self, vmi: JSON, phase: str) -> None:
        if phase == VirtualMachineInstancePhase.RUNNING:
            self._events.event(vmi, "Normal", "Started", "VirtualMachineInstance started.")
        elif phase == VirtualMachineInstancePhase.SUCCEEDED:
            self._events.event(vmi, "Normal", "Stopped", "The VirtualMachineInstance was shut down.")
        elif phase == VirtualMachineInstancePhase.FAILED:
            self._events.event(vmi, "Warning", "Stopped", "The VirtualMachineInstance crashed.")
