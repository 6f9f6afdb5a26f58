# ruff: noqa: N802  (gRPC method names are fixed by the protocol)
"""The ``kubevirt.cmd.v1.Cmd`` servicer: each RPC calls the domain manager and reports the outcome.

As in KubeVirt, a command that fails answers ``success=false`` with a message (the gRPC call itself
succeeds); only Exec and GuestPing also fail the call itself (status UNKNOWN, KubeVirt's Go error text),
as KubeVirt's return their error. Nothing a request carries can take the server down.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
import libvirt

from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2, cmd_pb2_grpc
from kubevirt.handler_launcher_com.server import register_cmd_info, serve_unix
from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT
from kubevirt.virt_launcher.virtwrap.agent import AgentError, ExecExitError
from kubevirt.virt_launcher.virtwrap.errors import ManagerError
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.migration import MigrationOptions, Migrator
from kubevirt.virt_launcher.virtwrap.vmi import InvalidVMIError, VMIFacts, read_vmi
from kubevirt_api.core.v1.constants import FUNC_TEST_MEMORY_HOTPLUG_FAIL_ANNOTATION

R = TypeVar("R")


def _unsupported(what: str) -> cmd_pb2.Response:
    return cmd_pb2.Response(success=False, message=f"{what} is not supported by this virt-launcher")


class _UnsupportedCommands(cmd_pb2_grpc.CmdServicer):
    """Commands for features this launcher does not offer (SEV, memory dumps, screenshots)."""

    def VirtualMachineMemoryDump(self, request: cmd_pb2.MemoryDumpRequest, context: Any) -> cmd_pb2.Response:
        return _unsupported("memory dump")

    def GetSEVInfo(self, request: cmd_pb2.EmptyRequest, context: Any) -> cmd_pb2.SEVInfoResponse:
        return cmd_pb2.SEVInfoResponse(response=_unsupported("SEV"))

    def GetLaunchMeasurement(
        self, request: cmd_pb2.VMIRequest, context: Any
    ) -> cmd_pb2.LaunchMeasurementResponse:
        return cmd_pb2.LaunchMeasurementResponse(response=_unsupported("SEV"))

    def InjectLaunchSecret(
        self, request: cmd_pb2.InjectLaunchSecretRequest, context: Any
    ) -> cmd_pb2.Response:
        return _unsupported("SEV")

    def GetDomainDirtyRateStats(
        self, request: cmd_pb2.EmptyRequest, context: Any
    ) -> cmd_pb2.DirtyRateStatsResponse:
        return cmd_pb2.DirtyRateStatsResponse(response=_unsupported("dirty rate measurement"))

    def GetScreenshot(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.ScreenshotResponse:
        return cmd_pb2.ScreenshotResponse(response=_unsupported("screenshot"))


class CommandServer(_UnsupportedCommands):
    def __init__(
        self,
        manager: DomainManager,
        migrator: Migrator,
        *,
        pod_name: str = "",
        on_target_cleanup: Callable[[], None] | None = None,
    ) -> None:
        self._manager = manager
        self._migrator = migrator
        self._pod_name = pod_name
        self._on_target_cleanup = on_target_cleanup or (lambda: None)
        self._log = get_logger(component=COMPONENT)

    # -- helpers ---------------------------------------------------------------------------------

    def _run(self, command: str, action: Callable[[], R]) -> tuple[R | None, cmd_pb2.Response]:
        try:
            return action(), cmd_pb2.Response(success=True)
        except (ManagerError, InvalidVMIError) as err:
            self._log.warning("command failed", command=command, reason=str(err))
            return None, cmd_pb2.Response(success=False, message=str(err))
        except libvirt.libvirtError as err:
            self._log.warning("command failed", command=command, reason=str(err))
            return None, cmd_pb2.Response(success=False, message=f"libvirt: {err.get_error_message()}")
        except Exception as err:  # a bug must not kill the server: report it to the caller
            self._log.exception("command failed unexpectedly", command=command)
            return None, cmd_pb2.Response(success=False, message=f"internal error: {err}")

    def _vmi_command(
        self, command: str, request: Any, action: Callable[[VMIFacts], None]
    ) -> cmd_pb2.Response:
        # The request's VMI is read here, once; the action gets its facts (and its JSON, for a conversion).
        _, response = self._run(command, lambda: action(read_vmi(request.vmi.vmiJson)))
        return response

    # -- lifecycle -------------------------------------------------------------------------------

    def SyncVirtualMachine(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command(
            "SyncVirtualMachine", request, lambda vmi: self._manager.sync_vmi(vmi, request.options)
        )

    def PauseVirtualMachine(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("PauseVirtualMachine", request, self._manager.pause_vmi)

    def UnpauseVirtualMachine(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("UnpauseVirtualMachine", request, self._manager.unpause_vmi)

    def ShutdownVirtualMachine(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("ShutdownVirtualMachine", request, self._manager.shutdown_vmi)

    def KillVirtualMachine(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("KillVirtualMachine", request, self._manager.kill_vmi)

    def DeleteVirtualMachine(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("DeleteVirtualMachine", request, self._manager.delete_vmi)

    def SoftRebootVirtualMachine(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("SoftRebootVirtualMachine", request, self._manager.soft_reboot_vmi)

    def ResetVirtualMachine(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("ResetVirtualMachine", request, self._manager.reset_vmi)

    # -- CPU and memory hotplug -------------------------------------------------------------------

    def SyncVirtualMachineCPUs(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("SyncVirtualMachineCPUs", request, self._manager.update_vcpus)

    def SyncVirtualMachineMemory(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        def update(vmi: VMIFacts) -> None:
            # As KubeVirt's launcher: the annotation its functional tests set makes the hotplug fail.
            if FUNC_TEST_MEMORY_HOTPLUG_FAIL_ANNOTATION in vmi.view.annotations:
                raise ManagerError(FUNC_TEST_MEMORY_HOTPLUG_FAIL_ANNOTATION)
            self._manager.update_guest_memory(vmi)

        return self._vmi_command("SyncVirtualMachineMemory", request, update)

    # -- migration -------------------------------------------------------------------------------

    def MigrateVirtualMachine(self, request: cmd_pb2.MigrationRequest, context: Any) -> cmd_pb2.Response:
        def migrate() -> None:
            vmi = read_vmi(request.vmi.vmiJson)
            self._migrator.migrate(vmi, MigrationOptions.from_json(request.options))

        return self._run("MigrateVirtualMachine", migrate)[1]

    def CancelVirtualMachineMigration(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("CancelVirtualMachineMigration", request, self._migrator.cancel)

    def SyncMigrationTarget(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command(
            "SyncMigrationTarget",
            request,
            lambda vmi: self._migrator.prepare_target(vmi, request.options),
        )

    def SignalTargetPodCleanup(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        def signal(vmi: VMIFacts) -> None:
            if self._pod_name and vmi.migration_target_pod == self._pod_name:
                self._on_target_cleanup()

        return self._vmi_command("SignalTargetPodCleanup", request, signal)

    def FinalizeVirtualMachineMigration(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        # No post-migration fix-ups without passt bindings; KubeVirt's guest clock sync through the agent
        # (libvirt's setTime) is not done here yet.
        return self._vmi_command("FinalizeVirtualMachineMigration", request, facts_only(self._manager))

    def HotplugHostDevices(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("HotplugHostDevices", request, facts_only(self._manager))

    # -- queries ---------------------------------------------------------------------------------

    def GetDomain(self, request: cmd_pb2.EmptyRequest, context: Any) -> cmd_pb2.DomainResponse:
        domain, response = self._run("GetDomain", self._manager.get_domain)
        return cmd_pb2.DomainResponse(response=response, domain=json.dumps(domain) if domain else "")

    def GetDomainStats(self, request: cmd_pb2.EmptyRequest, context: Any) -> cmd_pb2.DomainStatsResponse:
        stats, response = self._run("GetDomainStats", self._manager.get_domain_stats)
        return cmd_pb2.DomainStatsResponse(response=response, domainStats=json.dumps(stats) if stats else "")

    def GetGuestInfo(self, request: cmd_pb2.EmptyRequest, context: Any) -> cmd_pb2.GuestInfoResponse:
        info, response = self._run("GetGuestInfo", self._manager.get_guest_info)
        return cmd_pb2.GuestInfoResponse(response=response, guestInfoResponse=json.dumps(info or {}))

    def GetUsers(self, request: cmd_pb2.EmptyRequest, context: Any) -> cmd_pb2.GuestUserListResponse:
        users, response = self._run("GetUsers", self._manager.get_users)
        return cmd_pb2.GuestUserListResponse(response=response, guestUserListResponse=json.dumps(users or []))

    def GetFilesystems(self, request: cmd_pb2.EmptyRequest, context: Any) -> cmd_pb2.GuestFilesystemsResponse:
        filesystems, response = self._run("GetFilesystems", self._manager.get_filesystems)
        return cmd_pb2.GuestFilesystemsResponse(
            response=response, guestFilesystemsResponse=json.dumps(filesystems or [])
        )

    def Ping(self, request: cmd_pb2.EmptyRequest, context: Any) -> cmd_pb2.Response:
        return cmd_pb2.Response(success=True)

    def GetQemuVersion(self, request: cmd_pb2.EmptyRequest, context: Any) -> cmd_pb2.QemuVersionResponse:
        def version() -> str:
            number = self._manager.conn.getVersion()
            return f"{number // 1_000_000}.{number // 1000 % 1000}.{number % 1000}"

        value, response = self._run("GetQemuVersion", version)
        return cmd_pb2.QemuVersionResponse(response=response, version=value or "")

    # -- guest-agent commands --------------------------------------------------------------------

    def FreezeVirtualMachine(self, request: cmd_pb2.FreezeRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command(
            "FreezeVirtualMachine",
            request,
            lambda vmi: self._manager.freeze_vmi(vmi, request.unfreezeTimeoutSeconds),
        )

    def UnfreezeVirtualMachine(self, request: cmd_pb2.VMIRequest, context: Any) -> cmd_pb2.Response:
        return self._vmi_command("UnfreezeVirtualMachine", request, self._manager.unfreeze_vmi)

    def Exec(self, request: cmd_pb2.ExecRequest, context: Any) -> cmd_pb2.ExecResponse:
        try:
            stdout = self._manager.guest_exec(
                request.domainName, request.Command, list(request.Args), request.timeoutSeconds
            )
        except ExecExitError as err:  # the command ran: KubeVirt answers its exit code
            return cmd_pb2.ExecResponse(
                response=cmd_pb2.Response(success=True), exitCode=err.exit_code, stdOut=err.stdout
            )
        except Exception as err:
            message = self._agent_failure("Exec", err)
            _fail_call(context, message)
            return cmd_pb2.ExecResponse(response=cmd_pb2.Response(success=False, message=message))
        return cmd_pb2.ExecResponse(response=cmd_pb2.Response(success=True), exitCode=0, stdOut=stdout)

    def GuestPing(self, request: cmd_pb2.GuestPingRequest, context: Any) -> cmd_pb2.GuestPingResponse:
        try:
            self._manager.guest_ping(request.domainName, request.timeoutSeconds)
        except Exception as err:
            message = self._agent_failure("GuestPing", err)
            _fail_call(context, message)
            return cmd_pb2.GuestPingResponse(response=cmd_pb2.Response(success=False, message=message))
        return cmd_pb2.GuestPingResponse(response=cmd_pb2.Response(success=True))

    def _agent_failure(self, command: str, err: Exception) -> str:
        """KubeVirt's text for a failed Exec or GuestPing (the Go error's own)."""
        if isinstance(err, AgentError):
            self._log.info("guest agent command failed", command=command, reason=str(err))
            return err.go_message
        if isinstance(err, ManagerError):
            self._log.info("guest agent command failed", command=command, reason=str(err))
            return str(err)
        self._log.exception("guest agent command failed unexpectedly", command=command)
        return f"internal error: {err}"


def _fail_call(context: Any, message: str) -> None:
    """Fail the gRPC call as a Go server does when its method returns an error (the reply is dropped)."""
    if context is not None:
        context.set_code(grpc.StatusCode.UNKNOWN)
        context.set_details(message)


def facts_only(manager: DomainManager) -> Callable[[VMIFacts], None]:
    """An action that only checks the VMI names an existing domain."""

    def check(vmi: VMIFacts) -> None:
        manager.require_domain(vmi)

    return check


def serve(socket_path: Path, servicer: CommandServer) -> grpc.Server:
    """Serve the command and version services on ``socket_path``."""

    def register(server: grpc.Server) -> None:
        cmd_pb2_grpc.add_CmdServicer_to_server(servicer, server)
        register_cmd_info(server)

    return serve_unix(socket_path, register)
