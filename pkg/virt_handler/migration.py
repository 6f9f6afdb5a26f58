"""virt-handler's two migration roles, driven by the VMI's ``status.migrationState``.

Source (the VMI's node, ``migrationState.sourceNode``): once the target published its address and
ports, start the source proxies and ask the launcher to migrate, once; on ``abortRequested`` cancel it;
copy the launcher's outcome (start/end, mode, failure, abort status) from the domain's migration
metadata into ``migrationState``. After a successful migration the source's stopped copy of the domain
is undefined so its launcher exits.

Target (VMIs labelled ``kubevirt.io/migrationTargetNodeName=<this node>``): put the VMI's containerDisks
and hotplugged volumes (from ``targetAttachmentPodUID``) into the target pod, prepare the target launcher
(``SyncMigrationTarget``), start the target listeners and publish ``targetNodeAddress`` and
``targetDirectMigrationNodePorts``; report the incoming domain (detected, then ready). When the domain
runs here and the source reported the migration's end, take the VMI over: a CPU or memory hotplug the
migration was for is finished on this launcher (:mod:`.live_update`), its ``nodeName`` (label and
status) becomes this node, ``completed`` is set and the ``Migrated`` event recorded; the VM controller here
then finds the volumes the target mounted in place (the mount records are the node's, per VMI). A failed
migration is cleaned up: listeners stopped, the target launcher told to exit, the mounts into its pod
removed, the target label removed; a VMI that ends or is deleted meanwhile has its mounts removed too.

Both sides write ``migrationState`` with a merge patch guarded by the resourceVersion they read.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, EventSink, KubeApi
from kubevirt.client.errors import ConflictError, NotFoundError
from kubevirt.controller import RequeueAfter, Store, split_key
from kubevirt.handler_launcher_com.cmd.client import LauncherClientError, LauncherDisconnectedError
from kubevirt.handler_launcher_com.sockets import (
    LAUNCHER_LIBVIRT_SOCKET,
    LAUNCHER_LIBVIRT_SOCKET_DIR,
    LAUNCHER_MIGRATION_PROXY_DIR,
    migration_proxy_key,
)
from kubevirt.log import get_logger
from kubevirt.podroot import PodRoot
from kubevirt.virt_config.migrations import launcher_options
from kubevirt.virt_handler import phase as phases
from kubevirt.virt_handler.container_disk.mounter import ContainerDiskError
from kubevirt.virt_handler.host_disks import HostDiskPreparationError, HostDisks
from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError
from kubevirt.virt_handler.hotplug_disk.mounter import (
    LauncherPod,
    hotplug_volumes,
    target_attachment_pod,
)
from kubevirt.virt_handler.launcher_sockets import SocketLookupError, find_launcher_socket
from kubevirt.virt_handler.live_update import (
    CPU_FAILED_MESSAGE,
    MEMORY_FAILED_MESSAGE,
    HotplugError,
    MemoryOverhead,
    hand_off_patch,
    hotplug_cpu,
    hotplug_memory,
    no_overhead,
)
from kubevirt.virt_handler.migratable import BLOCK_MIGRATION
from kubevirt.virt_handler.migration_proxy import (
    LIBVIRT_PORT_KEY,
    MigrationProxyError,
    ProxyManager,
    bind_unix_in_pod,
    unix_opener,
)
from kubevirt.virt_handler.network import NetworkSetupError
from kubevirt.virt_handler.pod_ownership import PodOwnership, PodOwnershipError, runtime_user
from kubevirt.virt_handler.pod_sockets import PodSocketError, launcher_root
from kubevirt_api.core.v1 import FINAL_VMI_PHASES, MigrationAbortStatus, VirtualMachineInstancePhase
from kubevirt_api.view import JSON

NODE_NAME_LABEL = "kubevirt.io/nodeName"
MIGRATION_TARGET_NODE_NAME_LABEL = "kubevirt.io/migrationTargetNodeName"
DIRECT_MIGRATION_PORT = 49152
BLOCK_MIGRATION_PORT = 49153  # the target libvirt's NBD server, for a block migration's disks
# While a migration runs, the roles look again this often (launcher events do not reach them).
POLL_SECONDS = 0.5
# How long the source waits, after the end, for the target to report the domain running there.
TARGET_CONFIRMATION_SECONDS = 60.0
# A failed target's mounts that could not be removed are tried again this soon (its label stays till then).
RELEASE_RETRY_SECONDS = 5.0


class MigrationLauncher(Protocol):
    def vmi_command(self, command: str, vmi: JSON) -> None: ...
    def migrate_vmi(self, vmi: Mapping[str, Any], options: Mapping[str, Any]) -> None: ...
    def get_domain(self) -> JSON | None: ...
    def close(self) -> None: ...


class DiskMounter(Protocol):
    """The node's containerDisk mounter (``container_disk.mounter.Mounter``), as the target uses it."""

    def mount(self, vmi: Mapping[str, Any], node: str) -> bool: ...
    def unmount(self, vmi_uid: str) -> None: ...


class HotplugDisks(Protocol):
    """The node's hotplug volume mounter (``hotplug_disk.mounter.HotplugMounter``), as the target uses it."""

    def mount(self, vmi: Mapping[str, Any], launcher: LauncherPod, *, from_pod: str = "") -> list[str]: ...
    def mounted(self, vmi: Mapping[str, Any]) -> frozenset[str]: ...
    def unmount_all(self, vmi_uid: str) -> None: ...


class PodNetwork(Protocol):
    """The node's phase-1 pod network setup (``network.HandlerNetwork``), as the target uses it."""

    def setup(self, vmi: Mapping[str, Any], launcher_socket: Path) -> None: ...
    def forget(self, uid: str) -> None: ...


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(text: str) -> datetime:
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def migration_state(vmi: Mapping[str, Any]) -> JSON:
    return dict((vmi.get("status") or {}).get("migrationState") or {})


def domain_migration(domain: JSON | None, migration_uid: str) -> JSON:
    """This migration's record in the domain's KubeVirt metadata (empty for another or none)."""
    kubevirt = (((domain or {}).get("Spec") or {}).get("Metadata") or {}).get("KubeVirt") or {}
    record: JSON = kubevirt.get("Migration") or {}
    return record if record.get("UID") == migration_uid else {}


class _Role:
    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        node: str,
        pods_dir: Path,
        connect: Callable[[Path], MigrationLauncher],
        proxies: ProxyManager,
        pod_root: Callable[[Path], PodRoot] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._clock = clock
        self._api = api
        self._events = events
        self._node = node
        self._pods_dir = pods_dir
        self._connect = connect
        self._proxies = proxies
        # The launcher pod's root, found from its command socket (the kernel names the peer's PID).
        self._pod_root = pod_root or launcher_root
        self._log = get_logger()

    def _launcher(self, socket: Path) -> MigrationLauncher:
        try:
            return self._connect(socket)
        except SocketLookupError:
            raise RequeueAfter(POLL_SECONDS) from None  # the socket changed since it was found

    def _launcher_root(self, socket: Path) -> PodRoot:
        try:
            return self._pod_root(socket)
        except PodSocketError as err:
            raise MigrationProxyError(f"the launcher's pod: {err}") from None

    def _socket(self, vmi: JSON) -> Path | None:
        try:
            return find_launcher_socket(
                self._pods_dir, (vmi.get("status") or {}).get("activePods") or {}, self._node
            )
        except SocketLookupError:
            return None

    def _patch(
        self, vmi: JSON, state: JSON, *, metadata: JSON | None = None, status: JSON | None = None
    ) -> None:
        namespace, name = split_key(f"{vmi['metadata']['namespace']}/{vmi['metadata']['name']}")
        patch = {
            "metadata": {"resourceVersion": vmi["metadata"].get("resourceVersion"), **(metadata or {})},
            "status": {**(status or {}), "migrationState": state},
        }
        try:
            self._api.patch(VIRTUAL_MACHINE_INSTANCES, namespace, name, patch, patch_type="merge")
        except NotFoundError:
            return
        except ConflictError:
            raise RequeueAfter(0.1) from None


class MigrationSource(_Role):
    """The source node's part; :class:`~kubevirt.virt_handler.vm_controller.VMController` hands it
    the VMIs it :meth:`owns`."""

    def _failed_event(self, vmi: JSON, state: JSON, reason: str) -> None:
        message = f"VirtualMachineInstance migration uid {state.get('migrationUid')} failed. reason: {reason}"
        self._events.event(vmi, "Warning", "Migrated", message)

    def owns(self, vmi: JSON) -> bool:
        state = migration_state(vmi)
        if not state.get("migrationUid") or state.get("sourceNode") != self._node:
            return False
        if state.get("failed"):
            self._proxies.stop(str(vmi["metadata"]["uid"]))  # whoever reported it, the pipes go
            return False
        return (vmi.get("status") or {}).get("nodeName") == self._node

    def reconcile(self, vmi: JSON) -> None:
        vmi = copy.deepcopy(vmi)
        state = migration_state(vmi)
        uid = str(vmi["metadata"]["uid"])
        socket = self._socket(vmi)
        if socket is None:
            if state.get("endTimestamp"):
                # The migrated-away launcher exited; the target takes the VMI over, or it times out.
                self._await_target(vmi, state, state)
                return
            raise RequeueAfter(POLL_SECONDS)
        launcher = self._launcher(socket)
        try:
            new_state = self._drive(launcher, vmi, state, socket)
        except LauncherDisconnectedError:
            raise RequeueAfter(POLL_SECONDS) from None
        except (LauncherClientError, MigrationProxyError) as err:
            self._log.error("migration source failed", name=vmi["metadata"]["name"], reason=str(err))
            self._failed_event(vmi, state, str(err))
            new_state = {**state, "failed": True, "failureReason": str(err), "endTimestamp": _now()}
            self._proxies.stop(uid)
        finally:
            launcher.close()
        if not new_state.get("endTimestamp"):
            if new_state != state:
                self._patch(vmi, new_state)
            raise RequeueAfter(POLL_SECONDS)
        self._await_target(vmi, state, new_state)

    def _await_target(self, vmi: JSON, state: JSON, new_state: JSON) -> None:
        """After a successful end the target must report the domain running there in time (KubeVirt's
        60 s); otherwise the guest is nowhere the cluster knows of and the VMI fails."""
        status: JSON = {}
        requeue: float | None = None
        if not new_state.get("failed") and not new_state.get("targetNodeDomainReadyTimestamp"):
            try:
                elapsed = (self._clock() - _parse_time(str(new_state["endTimestamp"]))).total_seconds()
            except ValueError:  # an end nobody can date is as good as long past
                elapsed = TARGET_CONFIRMATION_SECONDS + 1
            message = None
            if not new_state.get("targetNode"):
                message = "The VirtualMachineInstance migrated to unknown host."
            elif elapsed > TARGET_CONFIRMATION_SECONDS:
                message = (
                    "The VirtualMachineInstance's domain was never observed on the target after the "
                    "migration completed within the timeout period."
                )
            else:
                requeue = max(5.0, TARGET_CONFIRMATION_SECONDS - elapsed)
            if message is not None:
                new_state = {**new_state, "completed": True, "failed": True}
                stamps = (vmi.get("status") or {}).get("phaseTransitionTimestamps") or []
                status = {
                    "phase": VirtualMachineInstancePhase.FAILED,
                    "phaseTransitionTimestamps": [
                        *stamps,
                        {"phase": VirtualMachineInstancePhase.FAILED, "phaseTransitionTimestamp": _now()},
                    ],
                }
                self._events.event(vmi, "Warning", "Migrated", message)
        if new_state != state or status:
            self._patch(vmi, new_state, status=status)
        if requeue is not None:
            raise RequeueAfter(requeue)

    def _drive(self, launcher: MigrationLauncher, vmi: JSON, state: JSON, socket: Path) -> JSON:
        uid = str(vmi["metadata"]["uid"])
        domain = launcher.get_domain()
        record = domain_migration(domain, str(state["migrationUid"]))
        new = dict(state)
        if record.get("StartTimestamp"):
            new["startTimestamp"] = record["StartTimestamp"]
        if record.get("EndTimestamp"):
            self._proxies.stop(uid)
            new.update(endTimestamp=record["EndTimestamp"], mode=record.get("Mode") or "PreCopy")
            if record.get("AbortStatus"):
                new["abortStatus"] = record["AbortStatus"]
            if record.get("Failed"):
                new.update(failed=True, failureReason=record.get("FailureReason") or "")
                self._failed_event(vmi, state, new["failureReason"])
            elif phases.domain_state(domain) == ("Shutoff", "Migrated") and state.get("endTimestamp"):
                # The guest runs on the target and the end is on record: the stopped copy here goes, and
                # its launcher with it. Not before: the copy holds the record until the VMI does (a
                # write lost to a conflict is made again from it).
                launcher.vmi_command("DeleteVirtualMachine", vmi)
            return new
        if state.get("abortRequested"):
            if not record:
                # Never started: nothing to cancel, the migration simply ends here.
                self._proxies.stop(uid)
                return {
                    **new,
                    "failed": True,
                    "abortStatus": MigrationAbortStatus.SUCCEEDED,
                    "endTimestamp": _now(),
                    "failureReason": "Migration aborted before it started",
                }
            if not state.get("abortStatus"):
                try:
                    launcher.vmi_command("CancelVirtualMachineMigration", vmi)
                except LauncherDisconnectedError:
                    raise
                except LauncherClientError as err:
                    # As in KubeVirt, a refused cancel fails nothing: the migration may just have ended
                    # (its outcome, abort status included, is in the record read at the next poll).
                    self._log.warning(
                        "migration cancel refused", name=vmi["metadata"]["name"], reason=str(err)
                    )
                    return new
                new["abortStatus"] = MigrationAbortStatus.IN_PROGRESS
            return new
        ports = state.get("targetDirectMigrationNodePorts") or {}
        address = state.get("targetNodeAddress")
        if record or not address or not ports or not phases.domain_alive(domain):
            return new
        self._start_proxies(vmi, socket, address, ports)
        launcher.migrate_vmi(vmi, launcher_options(state.get("migrationConfiguration")))
        self._events.event(
            vmi,
            "Normal",
            "Migrating",
            f"VirtualMachineInstance is migrating to node {state.get('targetNode')}.",
        )
        new.setdefault("startTimestamp", _now())
        return new

    def _start_proxies(self, vmi: JSON, socket: Path, address: str, ports: Mapping[str, Any]) -> None:
        uid = str(vmi["metadata"]["uid"])
        if self._proxies.running(uid):
            return
        try:
            # A non-root launcher's libvirt and QEMU connect to the sockets as its user.
            owner = runtime_user(vmi)
        except PodOwnershipError as err:
            raise MigrationProxyError(str(err)) from None
        root = self._launcher_root(socket)
        listeners = []
        try:
            for node_port, pod_port in ports.items():
                name = f"{migration_proxy_key(uid, pod_port)}-source.sock"
                listener = bind_unix_in_pod(root, LAUNCHER_MIGRATION_PROXY_DIR, name, owner=owner)
                listeners.append((listener, address, int(node_port)))
        except MigrationProxyError:
            for listener, _, _ in listeners:
                listener.close()
            raise
        self._proxies.start_source(uid, listeners)


class MigrationTarget(_Role):
    """The target node's part: a reconciler over the VMIs labelled for this node as migration target."""

    def __init__(
        self,
        *,
        vmi_store: Store[JSON],
        address: str,
        mounter: DiskMounter | None = None,
        hotplug: HotplugDisks | None = None,
        network: PodNetwork | None = None,
        ownership: PodOwnership | None = None,
        host_disks: HostDisks | None = None,
        memory_overhead: MemoryOverhead = no_overhead,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._memory_overhead = memory_overhead
        self._vmis = vmi_store
        self._address = address
        self._mounter = mounter
        self._hotplug = hotplug
        self._network = network
        self._ownership = ownership
        self._host_disks = host_disks
        self._lock = threading.Lock()
        self._prepared: set[str] = set()
        self._uids: dict[str, str] = {}  # key -> VMI UID, to stop a deleted VMI's listeners

    def reconcile(self, key: str) -> None:
        cached = self._vmis.get_by_key(key)
        if cached is None:
            with self._lock:
                uid = self._uids.pop(key, None)
                self._prepared.discard(uid or "")
            if uid:
                self._proxies.stop(uid)
            return
        vmi = copy.deepcopy(cached)
        state = migration_state(vmi)
        uid = str(vmi["metadata"]["uid"])
        if state.get("targetNode") != self._node or not state.get("migrationUid"):
            return
        with self._lock:
            self._uids[key] = uid
        if state.get("failed") or state.get("completed"):
            self._finish(vmi, state, uid)
            return
        if self._ending(vmi):
            # KubeVirt's best-effort cleanup: no migration is coming for a VMI that ends or goes.
            self._proxies.stop(uid)
            with self._lock:
                self._prepared.discard(uid)
            self._release_disks(uid)
            return
        socket = self._socket(vmi)
        if socket is None:
            raise RequeueAfter(POLL_SECONDS)
        launcher = self._launcher(socket)
        try:
            self._drive(launcher, vmi, state, uid, socket)
        except LauncherDisconnectedError:
            raise RequeueAfter(POLL_SECONDS) from None
        except (
            LauncherClientError,
            MigrationProxyError,
            ContainerDiskError,
            HotplugVolumeError,
            NetworkSetupError,
            PodOwnershipError,
            HostDiskPreparationError,
        ) as err:
            # The source decides how the migration ends; the target tries again (the incoming domain
            # comes and goes while the migration runs or is cancelled).
            self._log.warning("migration target not ready", name=vmi["metadata"]["name"], reason=str(err))
            raise RequeueAfter(POLL_SECONDS) from err
        finally:
            launcher.close()

    def _drive(self, launcher: MigrationLauncher, vmi: JSON, state: JSON, uid: str, socket: Path) -> None:
        with self._lock:
            prepared = uid in self._prepared
        if not prepared:
            # The incoming domain is built on the VMI's disks: the target pod needs its containerDisks
            # mounted first, as a starting VMI's pod does.
            if self._mounter is not None and not self._mounter.mount(vmi, self._node):
                raise RequeueAfter(POLL_SECONDS)
            self._mount_hotplug(vmi, socket)
            if self._network is not None:
                # The target pod's network is wired for the guest (phase 1) before its domain arrives.
                # What this node recorded for the VMI belongs to an earlier pod of it here (a migration
                # that failed, or the VMI ran here before): this pod is new, so it is set up anew.
                self._network.forget(uid)
                self._network.setup(vmi, socket)
            if self._host_disks is not None:
                # As for a starting VMI: the DiskOrCreate images the incoming domain is built on.
                self._host_disks.prepare(vmi, socket)
            if self._ownership is not None:
                # A non-root target launcher opens its devices and disks as its user, as a starting one.
                self._ownership.claim(vmi, socket)
            launcher.vmi_command("SyncMigrationTarget", vmi)
            with self._lock:
                self._prepared.add(uid)
        if not self._proxies.running(uid):
            root = self._launcher_root(socket)
            openers = {
                int(LIBVIRT_PORT_KEY): unix_opener(root, LAUNCHER_LIBVIRT_SOCKET_DIR, LAUNCHER_LIBVIRT_SOCKET)
            }
            # As KubeVirt, the block port only for a VMI with node-local disks to copy.
            block = (vmi.get("status") or {}).get("migrationMethod") == BLOCK_MIGRATION
            for port in (DIRECT_MIGRATION_PORT, BLOCK_MIGRATION_PORT) if block else (DIRECT_MIGRATION_PORT,):
                name = f"{migration_proxy_key(uid, port)}-source.sock"
                openers[port] = unix_opener(root, LAUNCHER_MIGRATION_PROXY_DIR, name)
            self._proxies.start_target(uid, openers)
        new = dict(state)
        ports = self._proxies.target_ports(uid)
        if (
            state.get("targetNodeAddress") != self._address
            or state.get("targetDirectMigrationNodePorts") != ports
        ):
            new.update(targetNodeAddress=self._address, targetDirectMigrationNodePorts=ports)
            listed = ", ".join(sorted(ports))
            self._events.event(
                vmi,
                "Normal",
                "PreparingTarget",
                f"Migration Target is listening at {self._address}, on ports: {listed}",
            )
        domain = launcher.get_domain()
        if domain is not None:
            new["targetNodeDomainDetected"] = True
        running = phases.domain_state(domain)[0] == "Running"
        if running and not new.get("targetNodeDomainReadyTimestamp"):
            new["targetNodeDomainReadyTimestamp"] = _now()
        if running and state.get("endTimestamp") and not state.get("failed"):
            self._take_over(launcher, vmi, new)
            return
        if new != state:
            self._patch(vmi, new)
        raise RequeueAfter(POLL_SECONDS)

    @staticmethod
    def _ending(vmi: JSON) -> bool:
        phase = (vmi.get("status") or {}).get("phase")
        return phase in FINAL_VMI_PHASES or vmi["metadata"].get("deletionTimestamp") is not None

    def _mount_hotplug(self, vmi: JSON, socket: Path) -> None:
        """KubeVirt's ``MountFromPod``: the VMI's hotplugged volumes, from the attachment pod virt-controller
        made next to the target pod, into the target pod. The incoming domain opens each disk the source's
        domain has (an entry with a ``target``) at its path in the pod, so those must be in place before the
        target is prepared; until then this raises and the target tries again."""
        attachment = target_attachment_pod(vmi)
        if self._hotplug is None or not attachment:
            return
        pod = LauncherPod.of_socket(self._pods_dir, socket)
        for warning in self._hotplug.mount(vmi, pod, from_pod=attachment):
            self._log.warning("hotplug volume not mounted", name=vmi["metadata"]["name"], reason=warning)
        in_domain = {
            str(entry.get("name"))
            for entry in (vmi.get("status") or {}).get("volumeStatus") or []
            if isinstance(entry, dict) and entry.get("target")
        }
        wanted = {volume.name for volume in hotplug_volumes(vmi, from_pod=attachment)} & in_domain
        if missing := sorted(wanted - self._hotplug.mounted(vmi)):
            raise HotplugVolumeError(
                f"hotplugged volumes not in the target pod yet: {', '.join(missing)} "
                f"(attachment pod {attachment})"
            )

    def _take_over(self, launcher: MigrationLauncher, vmi: JSON, state: JSON) -> None:
        """The guest runs here: a CPU or memory hotplug the migration was for is finished on this
        launcher, then this node owns the VMI from now on."""
        updated = self._finish_hotplug(launcher, vmi)
        launcher.vmi_command("FinalizeVirtualMachineMigration", updated)
        hotplug_labels, hotplug_status = hand_off_patch(vmi, updated)
        state = {**state, "completed": True}
        self._patch(
            vmi,
            state,
            metadata={
                "labels": {
                    **hotplug_labels,
                    NODE_NAME_LABEL: self._node,
                    MIGRATION_TARGET_NODE_NAME_LABEL: None,
                }
            },
            status={
                **hotplug_status,
                "nodeName": self._node,
                "migrationTransport": "Unix",
                "evacuationNodeName": None,
            },
        )
        self._events.event(
            vmi, "Normal", "Migrated", f"The VirtualMachineInstance migrated to node {self._node}."
        )
        self._log.info("migration target took over the VMI", name=vmi["metadata"]["name"], node=self._node)
        with self._lock:
            self._prepared.discard(str(vmi["metadata"]["uid"]))
        self._proxies.stop(str(vmi["metadata"]["uid"]))

    def _finish_hotplug(self, launcher: MigrationLauncher, vmi: JSON) -> JSON:
        """A copy of the VMI after KubeVirt's ``hotplugCPU`` and ``hotplugMemory`` on this launcher. A step
        that fails is reported in an event and the take-over goes on, as in KubeVirt; a launcher that went
        away fails the take-over, which is tried again."""

        def command(name: str, current: JSON) -> None:
            try:
                launcher.vmi_command(name, current)
            except LauncherDisconnectedError:
                raise
            except LauncherClientError as err:
                raise HotplugError(str(err)) from err

        updated = copy.deepcopy(vmi)
        steps: tuple[tuple[Callable[[JSON], None], str], ...] = (
            (lambda current: hotplug_cpu(current, command), CPU_FAILED_MESSAGE),
            (lambda current: hotplug_memory(current, command, self._memory_overhead), MEMORY_FAILED_MESSAGE),
        )
        for step, message in steps:
            try:
                step(updated)
            except HotplugError as err:
                self._log.error("failed to finalize migration", name=vmi["metadata"]["name"], reason=str(err))
                self._events.event(vmi, "Warning", str(err), message)
        return updated

    def _release_disks(self, uid: str) -> bool:
        """A failed target's containerDisk and hotplug mounts go, or the kubelet could not remove its pod's
        volumes; whether all went (what did not stays recorded, for another try)."""
        released = True
        try:
            if self._mounter is not None:
                self._mounter.unmount(uid)
        except ContainerDiskError as err:
            self._log.error(
                "unmounting the failed target's container disks failed", vmi_uid=uid, reason=str(err)
            )
            released = False
        try:
            if self._hotplug is not None:
                self._hotplug.unmount_all(uid)
        except HotplugVolumeError as err:
            self._log.error(
                "unmounting the failed target's hotplugged volumes failed", vmi_uid=uid, reason=str(err)
            )
            released = False
        return released

    def _finish(self, vmi: JSON, state: JSON, uid: str) -> None:
        """After the end: listeners go; a failed target's launcher is told to exit; the label goes."""
        self._proxies.stop(uid)
        with self._lock:
            self._prepared.discard(uid)
        if state.get("failed"):
            socket = self._socket(vmi)
            if socket is not None:
                launcher = self._launcher(socket)
                try:
                    launcher.vmi_command("SignalTargetPodCleanup", vmi)
                except LauncherClientError as err:
                    self._log.warning("cannot release the target launcher", reason=str(err))
                finally:
                    launcher.close()
            if not self._release_disks(uid):
                # As KubeVirt: the label stays until the mounts are gone, so this VMI comes here again.
                raise RequeueAfter(RELEASE_RETRY_SECONDS)
        if MIGRATION_TARGET_NODE_NAME_LABEL in (vmi["metadata"].get("labels") or {}):
            self._patch(vmi, state, metadata={"labels": {MIGRATION_TARGET_NODE_NAME_LABEL: None}})
