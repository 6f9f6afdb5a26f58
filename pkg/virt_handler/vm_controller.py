"""virt-handler's VM controller: for each VMI on this node, drive its launcher and report its domain.

A reconcile reads the VMI from the node's cache, finds the launcher's command socket through the pod
directories, and then does one of: kill and undefine the domain (VMI deleted or final), or sync the VMI
into the launcher (start it; before the first sync its containerDisks are mounted into the pod, once their
containers are up). Whatever the domain then looks like is written back as the VMI's status (phase, node,
machine, interfaces, guest OS, conditions) with a conditional merge patch, only when it changed. The
containerDisk mounts go when the VMI is final, or deleted and its launcher gone.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, EventSink, KubeApi
from kubevirt.client.errors import ConflictError, NotFoundError
from kubevirt.controller import RequeueAfter, Store, split_key
from kubevirt.handler_launcher_com.cmd.client import LauncherClientError, LauncherDisconnectedError
from kubevirt.log import get_logger
from kubevirt.virt_handler import phase as phases
from kubevirt.virt_handler.container_disk.mounter import ContainerDiskError, Mounter
from kubevirt.virt_handler.launcher_sockets import SocketLookupError, find_launcher_socket

JSON = dict[str, Any]
SYNCHRONIZED = "Synchronized"
SYNC_FAILED_REASON = "Synchronizing with the Domain failed."
SOCKET_WAIT_SECONDS = 1.0
RESYNC_SECONDS = 5.0


class Launcher(Protocol):
    def sync_vmi(self, vmi: JSON) -> None: ...
    def vmi_command(self, command: str, vmi: JSON) -> None: ...
    def get_domain(self) -> JSON | None: ...
    def close(self) -> None: ...


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def interfaces_from_domain(domain: JSON) -> list[JSON]:
    """``status.interfaces`` from the domain: its NICs' names and MACs, addresses from the guest agent."""
    reported = {i.get("Mac"): i for i in ((domain.get("Status") or {}).get("Interfaces") or [])}
    found = []
    for nic in ((domain.get("Spec") or {}).get("Devices") or {}).get("Interfaces") or []:
        alias = ((nic.get("Alias") or {}).get("Name")) or ""
        name = alias.removeprefix("ua-")
        mac = (nic.get("MAC") or {}).get("MAC") or ""
        entry: JSON = {"name": name, "mac": mac, "infoSource": "domain"}
        agent = reported.get(mac)
        if agent and agent.get("Ip"):
            addresses = list(agent.get("IPs") or [agent["Ip"]])
            entry.update(ipAddress=agent["Ip"], ipAddresses=addresses, infoSource="domain, guest-agent")
        found.append(entry)
    return found


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


def machine_type(domain: JSON) -> str:
    """The machine type libvirt expanded the domain's to (``q35`` becomes ``pc-q35-<version>``)."""
    os_type = ((((domain.get("Spec") or {}).get("OS")) or {}).get("Type")) or {}
    return str(os_type.get("Machine") or "")


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
        mounter: Mounter | None = None,
    ) -> None:
        self._api = api
        self._events = events
        self._vmis = vmi_store
        self._node = node
        self._pods_dir = pods_dir
        self._connect = connect
        self._mounter = mounter
        self._log = get_logger()

    def reconcile(self, key: str) -> None:
        vmi = self._vmis.get_by_key(key)
        if vmi is None:
            # Its pod, and with it the launcher, goes with it; only our mounts into that pod are left.
            namespace, name = split_key(key)
            for uid in self._mounter.recorded(namespace or "", name) if self._mounter else []:
                self._unmount(uid)
            return
        vmi = copy.deepcopy(vmi)
        if self._mounter is not None:
            # A VMI deleted and created again under the same name while its mounts were still there.
            namespace, name = split_key(key)
            for uid in self._mounter.recorded(namespace or "", name):
                if uid != vmi["metadata"].get("uid"):
                    self._unmount(uid)
        status = vmi.setdefault("status", {})
        current = status.get("phase") or ""
        if current in phases.FINAL_PHASES:
            self._unmount(vmi["metadata"].get("uid") or "")
            return
        if current not in (phases.SCHEDULED, phases.RUNNING):
            return
        if (vmi["metadata"].get("labels") or {}).get("kubevirt.io/nodeName") != self._node:
            return
        try:
            socket = find_launcher_socket(self._pods_dir, status.get("activePods") or {}, self._node)
        except SocketLookupError:
            if vmi["metadata"].get("deletionTimestamp") is not None:
                # The launcher is gone: the kubelet cannot remove the pod's volumes while our mounts stay.
                self._unmount(vmi["metadata"].get("uid") or "")
            raise RequeueAfter(SOCKET_WAIT_SECONDS) from None
        launcher = self._connect(socket)
        try:
            domain, error = self._drive(launcher, vmi)
        finally:
            launcher.close()
        self._update_status(key, vmi, domain, error)
        if error is not None or vmi["status"].get("phase") != phases.RUNNING:
            raise RequeueAfter(SOCKET_WAIT_SECONDS if error is None else RESYNC_SECONDS)

    def _drive(self, launcher: Launcher, vmi: JSON) -> tuple[JSON | None, str | None]:
        deleting = vmi["metadata"].get("deletionTimestamp") is not None
        try:
            domain = launcher.get_domain()
            alive = domain is not None and phases.domain_state(domain)[0] not in ("Shutoff", "Crashed", "")
            if deleting:
                if alive:
                    launcher.vmi_command("KillVirtualMachine", vmi)
                    self._events.event(vmi, "Normal", "Deleted", "VirtualMachineInstance stopping")
                elif domain is not None:
                    launcher.vmi_command("DeleteVirtualMachine", vmi)
                    self._events.event(vmi, "Normal", "Deleted", "Signaled Deletion")
                else:
                    self._unmount(vmi["metadata"].get("uid") or "")
            elif domain is None or alive:
                if domain is None and self._mounter is not None:
                    # The disks must be in the pod before the launcher builds the domain on them.
                    if not self._mounter.ready(vmi, self._node):
                        raise RequeueAfter(SOCKET_WAIT_SECONDS)
                    self._mounter.mount(vmi, self._node)
                launcher.sync_vmi(vmi)
            return launcher.get_domain(), None
        except ContainerDiskError as err:
            self._log.error("mounting container disks failed", name=vmi["metadata"]["name"], reason=str(err))
            return None, str(err)
        except LauncherDisconnectedError:
            return None, None
        except LauncherClientError as err:
            self._log.error("syncing with the launcher failed", name=vmi["metadata"]["name"], reason=str(err))
            return None, str(err)

    def _unmount(self, vmi_uid: str) -> None:
        if self._mounter is None or not vmi_uid:
            return
        try:
            self._mounter.unmount(vmi_uid)
        except ContainerDiskError as err:
            self._log.error("unmounting container disks failed", vmi_uid=vmi_uid, reason=str(err))
            raise RequeueAfter(RESYNC_SECONDS) from None

    def _update_status(self, key: str, vmi: JSON, domain: JSON | None, error: str | None) -> None:
        original = copy.deepcopy(vmi["status"])
        status = vmi["status"]
        current = status.get("phase") or ""
        if domain is not None:
            if interfaces := interfaces_from_domain(domain):
                status["interfaces"] = interfaces
            if info := guest_os_info(domain):
                status["guestOSInfo"] = info
            if machine := machine_type(domain):
                status["machine"] = {"type": machine}
        if error is None or domain is not None:
            new_phase = phases.phase_from_domain(
                current,
                domain,
                launcher_unresponsive=False,
                vmi_grace=vmi["spec"].get("terminationGracePeriodSeconds"),
            )
        else:
            new_phase = current
        status["nodeName"] = status.get("nodeName") or self._node
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
        if status == original:
            return
        namespace, _ = split_key(key)
        try:
            # VMIs have no status subresource; the resourceVersion makes the write conditional.
            patch = {
                "metadata": {"resourceVersion": vmi["metadata"].get("resourceVersion")},
                "status": status,
            }
            self._api.patch(
                VIRTUAL_MACHINE_INSTANCES, namespace, vmi["metadata"]["name"], patch, patch_type="merge"
            )
        except NotFoundError:
            return
        except ConflictError:
            raise RequeueAfter(0.1) from None
        if new_phase != current:
            self._phase_event(vmi, new_phase)

    def _phase_event(self, vmi: JSON, phase: str) -> None:
        if phase == phases.RUNNING:
            self._events.event(vmi, "Normal", "Started", "VirtualMachineInstance started.")
        elif phase == phases.SUCCEEDED:
            self._events.event(vmi, "Normal", "Stopped", "The VirtualMachineInstance was shut down.")
        elif phase == phases.FAILED:
            self._events.event(vmi, "Warning", "Stopped", "The VirtualMachineInstance crashed.")
