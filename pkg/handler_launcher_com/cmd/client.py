"""A client for a virt-launcher's command socket, with KubeVirt's error convention.

The launcher answers application errors with ``success=false`` and a message; this client raises
:class:`CommandFailedError` with KubeVirt's wording for them, and :class:`LauncherDisconnectedError` when the
launcher went away (callers shutting a VMI down ignore those).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc

from kubevirt.handler_launcher_com.cmd.info import info_pb2 as info_pb2
from kubevirt.handler_launcher_com.cmd.info import info_pb2_grpc as info_grpc
from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2, cmd_pb2_grpc
from kubevirt.handler_launcher_com.sockets import grpc_target
from kubevirt.handler_launcher_com.versions import SUPPORTED_CMD_VERSIONS, highest_common_version

# KubeVirt's client deadlines: short for queries, longer for commands, longest for a freeze.
QUERY_TIMEOUT = 5.0
COMMAND_TIMEOUT = 20.0
FREEZE_TIMEOUT = 60.0

_DISCONNECTED = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED}


class LauncherClientError(Exception):
    """Base of the errors this client raises."""


# The names KubeVirt's client gives the Cmd methods in its errors, where they differ from the method's.
KUBEVIRT_COMMAND_NAMES = {
    "SyncVirtualMachine": "SyncVMI",
    "PauseVirtualMachine": "Pause",
    "UnpauseVirtualMachine": "Unpause",
    "FreezeVirtualMachine": "Freeze",
    "UnfreezeVirtualMachine": "Unfreeze",
    "SoftRebootVirtualMachine": "SoftReboot",
    "ResetVirtualMachine": "Reset",
    "ShutdownVirtualMachine": "Shutdown",
    "KillVirtualMachine": "Kill",
    "DeleteVirtualMachine": "Delete",
    "MigrateVirtualMachine": "Migrate",
    "CancelVirtualMachineMigration": "CancelMigration",
}
_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


class CommandFailedError(LauncherClientError):
    """The launcher ran the command and reported a failure; worded as KubeVirt's client words it (it
    reaches users in SyncFailed events)."""

    def __init__(self, command: str, message: str) -> None:
        name = KUBEVIRT_COMMAND_NAMES.get(command, command)
        super().__init__(f"server error. command {name} failed: {go_quote(message)}")
        self.command = command
        self.reason = message


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string (``strconv.Quote``): double-quoted, with quotes, backslashes and
    unprintable characters escaped."""
    out = ['"']
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char == " " or char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


class LauncherDisconnectedError(LauncherClientError):
    """The launcher is not reachable (gone, or not yet listening)."""


class CommandUnimplementedError(LauncherClientError):
    """The launcher does not implement this command."""


class LauncherClient:
    """Calls one launcher's ``kubevirt.cmd.v1.Cmd`` service over its unix socket."""

    def __init__(self, socket_path: Path, *, path_fd: int | None = None) -> None:
        """``path_fd``, when given, is an ``O_PATH`` descriptor of the socket (the client owns it): gRPC
        dials it as ``/proc/self/fd/<n>`` whenever it connects, so the inode checked is the one reached."""
        self.socket_path = socket_path
        self._path_fd = path_fd
        dialled = socket_path if path_fd is None else Path(f"/proc/self/fd/{path_fd}")
        self._channel = grpc.insecure_channel(grpc_target(dialled))
        self._stub = cmd_pb2_grpc.CmdStub(self._channel)
        self._info = info_grpc.CmdInfoStub(self._channel)

    def close(self) -> None:
        self._channel.close()
        if self._path_fd is not None:
            os.close(self._path_fd)
            self._path_fd = None

    def __enter__(self) -> LauncherClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def negotiate_version(self) -> int:
        reply: info_pb2.CmdInfoResponse = self._invoke("Info", self._info.Info, info_pb2.CmdInfoRequest())
        return highest_common_version(SUPPORTED_CMD_VERSIONS, reply.supportedCmdVersions)

    def call(self, command: str, request: Any, *, timeout: float = COMMAND_TIMEOUT) -> Any:
        """Call ``command`` on the Cmd service; raise on a failed ``Response``."""
        reply = self._invoke(command, getattr(self._stub, command), request, timeout=timeout)
        status = reply if isinstance(reply, cmd_pb2.Response) else reply.response
        if not status.success:
            raise CommandFailedError(command, status.message)
        return reply

    def _invoke(self, command: str, method: Any, request: Any, *, timeout: float = QUERY_TIMEOUT) -> Any:
        try:
            return method(request, timeout=timeout)
        except grpc.RpcError as err:
            code = err.code() if hasattr(err, "code") else None
            if code in _DISCONNECTED:
                raise LauncherDisconnectedError(f"{command}: launcher disconnected: {err}") from err
            if code == grpc.StatusCode.UNIMPLEMENTED:
                raise CommandUnimplementedError(f"{command}: not implemented by the launcher") from err
            raise LauncherClientError(f"{command}: {err}") from err

    # The commands virt-handler uses, with KubeVirt's payload encoding.

    def sync_vmi(self, vmi: Mapping[str, Any], options: cmd_pb2.VirtualMachineOptions | None = None) -> None:
        self.call("SyncVirtualMachine", vmi_request(vmi, options))

    def vmi_command(self, command: str, vmi: Mapping[str, Any]) -> None:
        """Pause/Unpause/Shutdown/Kill/Delete/SoftReboot/Reset/CancelMigration/SyncMigrationTarget/..."""
        self.call(command, vmi_request(vmi))

    def migrate_vmi(self, vmi: Mapping[str, Any], options: Mapping[str, Any]) -> None:
        request = cmd_pb2.MigrationRequest(
            vmi=cmd_pb2.VMI(vmiJson=json.dumps(vmi).encode()), options=json.dumps(options).encode()
        )
        self.call("MigrateVirtualMachine", request)

    def get_domain(self) -> dict[str, Any] | None:
        reply = self.call("GetDomain", cmd_pb2.EmptyRequest(), timeout=QUERY_TIMEOUT)
        return _json_object("GetDomain", "domain", reply.domain) if reply.domain else None

    def get_domain_stats(self) -> dict[str, Any] | None:
        reply = self.call("GetDomainStats", cmd_pb2.EmptyRequest(), timeout=QUERY_TIMEOUT)
        return _json_object("GetDomainStats", "domainStats", reply.domainStats) if reply.domainStats else None

    def get_guest_info(self) -> dict[str, Any]:
        reply = self.call("GetGuestInfo", cmd_pb2.EmptyRequest(), timeout=QUERY_TIMEOUT)
        return _json_object("GetGuestInfo", "guestInfoResponse", reply.guestInfoResponse or "{}")

    def get_users(self) -> list[Any]:
        reply = self.call("GetUsers", cmd_pb2.EmptyRequest(), timeout=QUERY_TIMEOUT)
        return _json_list("GetUsers", "guestUserListResponse", reply.guestUserListResponse)

    def get_filesystems(self) -> list[Any]:
        reply = self.call("GetFilesystems", cmd_pb2.EmptyRequest(), timeout=QUERY_TIMEOUT)
        return _json_list("GetFilesystems", "guestFilesystemsResponse", reply.guestFilesystemsResponse)

    def freeze_vmi(self, vmi: Mapping[str, Any], unfreeze_timeout_seconds: int) -> None:
        request = cmd_pb2.FreezeRequest(
            vmi=cmd_pb2.VMI(vmiJson=json.dumps(vmi).encode()),
            unfreezeTimeoutSeconds=unfreeze_timeout_seconds,
        )
        self.call("FreezeVirtualMachine", request, timeout=FREEZE_TIMEOUT)

    def ping(self) -> None:
        self.call("Ping", cmd_pb2.EmptyRequest(), timeout=QUERY_TIMEOUT)


def vmi_request(
    vmi: Mapping[str, Any], options: cmd_pb2.VirtualMachineOptions | None = None
) -> cmd_pb2.VMIRequest:
    return cmd_pb2.VMIRequest(vmi=cmd_pb2.VMI(vmiJson=json.dumps(vmi).encode()), options=options)


def _json_object(command: str, field: str, text: str) -> dict[str, Any]:
    """A JSON object from a launcher's reply; anything else is the launcher's fault, reported as such."""
    try:
        value = json.loads(text)
    except ValueError as err:
        raise LauncherClientError(f"{command}: {field}: malformed JSON from the launcher: {err}") from err
    if not isinstance(value, dict):
        raise LauncherClientError(
            f"{command}: {field}: the launcher sent {type(value).__name__}, not an object"
        )
    return value


def _json_list(command: str, field: str, text: str) -> list[Any]:
    """A JSON list from a launcher's reply (an empty answer is an empty list, as KubeVirt reads it)."""
    if not text:
        return []
    try:
        value = json.loads(text)
    except ValueError as err:
        raise LauncherClientError(f"{command}: {field}: malformed JSON from the launcher: {err}") from err
    if not isinstance(value, list):
        raise LauncherClientError(f"{command}: {field}: the launcher sent {type(value).__name__}, not a list")
    return value
