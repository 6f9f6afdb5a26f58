"""The lifecycle routes of virt-handler's console server: each turns into one launcher command.

virt-api has already checked the VMI; here it is looked up in the handler's own (node-filtered) cache,
its launcher found through the pod directories, and the command sent. Answers follow KubeVirt's: 202 with
no body for a PUT that went through, the guest agent's data as JSON for a GET, and the error's text
with 500 (400 for freeze and unfreeze) when the launcher refused. These calls block: run them in a thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kubevirt.client import JSON, EventSink
from kubevirt.handler_launcher_com.cmd.client import LauncherClientError
from kubevirt.log import get_logger
from kubevirt.service.durations import parse_duration
from kubevirt.virt_handler.launcher_sockets import SocketLookupError, find_launcher_pod, find_launcher_socket
from kubevirt.virt_handler.pod_sockets import connect_launcher

ACCEPTED = 202
BAD_REQUEST = 400
NOT_FOUND = 404
INTERNAL = 500
FREEZE_BODY_LIMIT = 1024


class RouteError(Exception):
    """An answer other than success: the HTTP code and the plain-text message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Launcher(Protocol):
    def vmi_command(self, command: str, vmi: JSON) -> None: ...
    def freeze_vmi(self, vmi: JSON, unfreeze_timeout_seconds: int) -> None: ...
    def get_guest_info(self) -> JSON: ...
    def get_users(self) -> list[Any]: ...
    def get_filesystems(self) -> list[Any]: ...
    def get_domain(self) -> JSON | None: ...
    def close(self) -> None: ...


class VMIStore(Protocol):
    def get_by_key(self, key: str) -> JSON | None: ...


@dataclass(frozen=True)
class PutCommand:
    rpc: str
    failure_code: int
    success_event: tuple[str, str] | None = None  # reason, message


PUT_COMMANDS: dict[str, PutCommand] = {
    "pause": PutCommand("PauseVirtualMachine", INTERNAL),
    "unpause": PutCommand("UnpauseVirtualMachine", INTERNAL),
    "unfreeze": PutCommand("UnfreezeVirtualMachine", BAD_REQUEST),
    "softreboot": PutCommand(
        "SoftRebootVirtualMachine", INTERNAL, ("SoftRebooted", "VirtualMachineInstance soft rebooted")
    ),
    "reset": PutCommand("ResetVirtualMachine", INTERNAL, ("Reset", "VirtualMachineInstance reset")),
}
GUEST_AGENT_READS = ("guestosinfo", "userlist", "filesystemlist")


@dataclass
class LauncherLocator:
    """The VMI's launcher on this node, found through the kubelet's pods directory."""

    pods_dir: Path
    node: str
    connect: Callable[[Path], Launcher] = connect_launcher

    def pod_uid(self, vmi: JSON) -> str:
        return find_launcher_pod(self.pods_dir, _active_pods(vmi), self.node)

    def launcher(self, vmi: JSON) -> Launcher:
        return self.connect(find_launcher_socket(self.pods_dir, _active_pods(vmi), self.node))


def _active_pods(vmi: JSON) -> dict[str, str]:
    pods = (vmi.get("status") or {}).get("activePods") or {}
    return {str(uid): str(node) for uid, node in pods.items()} if isinstance(pods, dict) else {}


def lookup_vmi(vmis: VMIStore, namespace: str, name: str) -> JSON:
    key = f"{namespace}/{name}"
    vmi = vmis.get_by_key(key)
    if vmi is None:
        raise RouteError(NOT_FOUND, f"VMI {key} does not exist")
    return vmi


def unfreeze_timeout_seconds(body: bytes) -> int:
    """``FreezeUnfreezeTimeout`` from the request body: ``{"unfreezeTimeout": "<Go duration>"}``."""
    if len(body) > FREEZE_BODY_LIMIT:
        raise RouteError(BAD_REQUEST, "failed to unmarshal unfreeze timeout")
    try:
        decoded = json.loads(body) if body.strip() else {}
        if not isinstance(decoded, dict):
            raise ValueError("not an object")
        timeout = decoded.get("unfreezeTimeout")
        seconds = None if timeout is None else parse_duration(str(timeout))
    except ValueError:
        raise RouteError(BAD_REQUEST, "failed to unmarshal unfreeze timeout") from None
    if seconds is None:
        raise RouteError(BAD_REQUEST, "Unfreeze timeout in freeze request is not set")
    return int(seconds)


@dataclass
class LifecycleHandler:
    vmis: VMIStore
    launchers: LauncherLocator
    events: EventSink
    # Told the VMI's key after a command went through: the domain changed, its status should follow.
    domain_changed: Callable[[str], None] | None = None

    def put(self, operation: str, namespace: str, name: str, body: bytes) -> int:
        vmi = lookup_vmi(self.vmis, namespace, name)
        seconds = unfreeze_timeout_seconds(body) if operation == "freeze" else 0
        launcher = self._launcher(vmi)
        try:
            if operation == "freeze":
                self._freeze(launcher, vmi, seconds)
            else:
                self._command(launcher, vmi, PUT_COMMANDS[operation])
        finally:
            launcher.close()
        if self.domain_changed is not None:
            self.domain_changed(f"{namespace}/{name}")
        return ACCEPTED

    def read(self, operation: str, namespace: str, name: str) -> JSON:
        vmi = lookup_vmi(self.vmis, namespace, name)
        launcher = self._launcher(vmi)
        try:
            if operation == "guestosinfo":
                return launcher.get_guest_info()
            items = launcher.get_users() if operation == "userlist" else launcher.get_filesystems()
            return {"metadata": {}, "items": items}
        except LauncherClientError as err:
            get_logger().error("reading from the guest agent failed", name=name, reason=str(err))
            raise RouteError(INTERNAL, str(err)) from None
        finally:
            launcher.close()

    def _launcher(self, vmi: JSON) -> Launcher:
        try:
            return self.launchers.launcher(vmi)
        except (SocketLookupError, OSError) as err:
            get_logger().error("Failed to detect cmd client", name=vmi["metadata"]["name"], reason=str(err))
            raise RouteError(INTERNAL, str(err)) from None

    def _command(self, launcher: Launcher, vmi: JSON, command: PutCommand) -> None:
        try:
            launcher.vmi_command(command.rpc, vmi)
        except LauncherClientError as err:
            get_logger().error("launcher command failed", command=command.rpc, reason=str(err))
            raise RouteError(command.failure_code, str(err)) from None
        if command.success_event is not None:
            reason, message = command.success_event
            self.events.event(vmi, "Normal", reason, message)

    def _freeze(self, launcher: Launcher, vmi: JSON, seconds: int) -> None:
        try:
            launcher.freeze_vmi(vmi, seconds)
        except LauncherClientError as err:
            self.events.event(vmi, "Warning", "FreezeError", f"Failed to freeze VMI: {err}")
            raise RouteError(BAD_REQUEST, str(err)) from None
