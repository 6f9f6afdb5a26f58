"""Registering the node plugin with the kubelet, as the CSI project's node-driver-registrar does.

The kubelet's plugin watcher finds a unix socket in its ``plugins_registry`` directory, calls ``GetInfo``
on the Registration service there (plugin type, driver name, the CSI endpoint the kubelet should use),
talks to that endpoint (NodeGetInfo: the node ID and topology it writes into the CSINode object and the
Node's labels), and reports the outcome with ``NotifyRegistrationStatus``.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import grpc

from .driver import DRIVER_NAME, serve_unix
from .proto import pluginregistration_pb2, pluginregistration_pb2_grpc

CSI_PLUGIN = "CSIPlugin"
SUPPORTED_VERSIONS = ("1.0.0",)


def registration_socket(registry: Path, driver: str = DRIVER_NAME) -> Path:
    return registry / f"{driver}-reg.sock"


class Registration(pluginregistration_pb2_grpc.RegistrationServicer):
    def __init__(self, endpoint: Path, driver: str = DRIVER_NAME) -> None:
        self.endpoint = endpoint
        self.driver = driver
        self.registered = threading.Event()
        self.error = ""

    def GetInfo(  # noqa: N802 - the gRPC method names
        self, request: pluginregistration_pb2.InfoRequest, context: grpc.ServicerContext
    ) -> pluginregistration_pb2.PluginInfo:
        return pluginregistration_pb2.PluginInfo(
            type=CSI_PLUGIN,
            name=self.driver,
            endpoint=str(self.endpoint),
            supported_versions=list(SUPPORTED_VERSIONS),
        )

    def NotifyRegistrationStatus(  # noqa: N802
        self, request: pluginregistration_pb2.RegistrationStatus, context: grpc.ServicerContext
    ) -> pluginregistration_pb2.RegistrationStatusResponse:
        if request.plugin_registered:
            self.error = ""
            self.registered.set()
            print(f"registered {self.driver} with the kubelet", file=sys.stderr, flush=True)
        else:
            self.error = request.error
            self.registered.clear()
            print(f"the kubelet refused {self.driver}: {request.error}", file=sys.stderr, flush=True)
        return pluginregistration_pb2.RegistrationStatusResponse()


def registration_server(registry: Path, registration: Registration) -> grpc.Server:
    def register(server: grpc.Server) -> None:
        pluginregistration_pb2_grpc.add_RegistrationServicer_to_server(registration, server)

    return serve_unix(registration_socket(registry, registration.driver), register, workers=2)
