"""gRPC servers on unix sockets, each also answering its protocol's version (``Info``) service."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from kubevirt.handler_launcher_com.cmd.info import info_pb2 as cmd_info_pb2
from kubevirt.handler_launcher_com.cmd.info import info_pb2_grpc as cmd_info_grpc
from kubevirt.handler_launcher_com.notify.info import info_pb2 as notify_info_pb2
from kubevirt.handler_launcher_com.notify.info import info_pb2_grpc as notify_info_grpc
from kubevirt.handler_launcher_com.versions import SUPPORTED_CMD_VERSIONS, SUPPORTED_NOTIFY_VERSIONS


class CmdInfoServer(cmd_info_grpc.CmdInfoServicer):
    def Info(  # noqa: N802 - the gRPC method name
        self, request: cmd_info_pb2.CmdInfoRequest, context: grpc.ServicerContext
    ) -> cmd_info_pb2.CmdInfoResponse:
        return cmd_info_pb2.CmdInfoResponse(supportedCmdVersions=SUPPORTED_CMD_VERSIONS)


class NotifyInfoServer(notify_info_grpc.NotifyInfoServicer):
    def Info(  # noqa: N802 - the gRPC method name
        self, request: notify_info_pb2.NotifyInfoRequest, context: grpc.ServicerContext
    ) -> notify_info_pb2.NotifyInfoResponse:
        return notify_info_pb2.NotifyInfoResponse(supportedNotifyVersions=SUPPORTED_NOTIFY_VERSIONS)


# Whatever the umask: only the owner (and its group) may reach or connect to a command socket.
SOCKET_DIR_MODE = 0o750
SOCKET_MODE = 0o660


def serve_unix(path: Path, register: Callable[[grpc.Server], None], *, max_workers: int = 4) -> grpc.Server:
    """Start a gRPC server listening on the unix socket ``path`` (replacing a stale socket file).

    The directory is closed to others before the socket exists, so the moment between the socket's
    creation (with the umask's permissions) and its chmod gives nobody else a way in."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.parent.stat().st_uid == os.geteuid():  # a shared directory of someone else's stays as is
        path.parent.chmod(SOCKET_DIR_MODE)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = grpc.server(ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc"))
    register(server)
    if server.add_insecure_port(f"unix:{path.absolute()}") == 0:
        raise OSError(f"cannot listen on {path}")
    path.chmod(SOCKET_MODE)
    server.start()
    return server


def register_cmd_info(server: grpc.Server) -> None:
    cmd_info_grpc.add_CmdInfoServicer_to_server(CmdInfoServer(), server)


def register_notify_info(server: grpc.Server) -> None:
    notify_info_grpc.add_NotifyInfoServicer_to_server(NotifyInfoServer(), server)
