"""Device plugins for the host devices a launcher pod may need (``devices.kubevirt.io/kvm``, ``tun``,
``vhost-net``), speaking the kubelet's device plugin API v1beta1.

Each plugin serves ``kubevirt-<name>.sock`` in the kubelet's device-plugins directory, registers there
with the kubelet, and advertises a fixed number of identical devices: healthy while the device file exists.
An allocation gives the container the device node. The kubelet removes plugin sockets when it restarts;
a plugin whose socket vanished serves and registers again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc

from kubevirt.handler_launcher_com.server import serve_unix
from kubevirt.log import get_logger
from kubevirt.virt_handler.device_manager.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc

API_VERSION = "v1beta1"
RESOURCE_PREFIX = "devices.kubevirt.io"
KUBELET_SOCKET = "kubelet.sock"
DEFAULT_DEVICE_PLUGINS_DIR = Path("/var/lib/kubelet/device-plugins")
DEFAULT_MAX_DEVICES = 1000
HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
CHECK_SECONDS = 5.0
REGISTER_TIMEOUT = 10.0


@dataclass(frozen=True)
class HostDevice:
    name: str  # the resource's short name: devices.kubevirt.io/<name>
    path: str  # the device node, the same on the host and in the container
    permissions: str = "mrw"

    @property
    def resource(self) -> str:
        return f"{RESOURCE_PREFIX}/{self.name}"


PERMANENT_DEVICES = (
    HostDevice("kvm", "/dev/kvm"),
    HostDevice("tun", "/dev/net/tun"),
    HostDevice("vhost-net", "/dev/vhost-net"),
)


class DevicePlugin(api_pb2_grpc.DevicePluginServicer):
    def __init__(
        self,
        device: HostDevice,
        *,
        plugins_dir: Path = DEFAULT_DEVICE_PLUGINS_DIR,
        count: int = DEFAULT_MAX_DEVICES,
        dev_root: Path = Path("/"),
    ) -> None:
        self.device = device
        self.plugins_dir = plugins_dir
        self.count = count
        self._dev_root = dev_root
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._server: grpc.Server | None = None
        self._log = get_logger()

    @property
    def socket(self) -> Path:
        return self.plugins_dir / f"kubevirt-{self.device.name}.sock"

    def healthy(self) -> bool:
        return (self._dev_root / self.device.path.lstrip("/")).exists()

    def devices(self) -> list[api_pb2.Device]:
        health = HEALTHY if self.healthy() else UNHEALTHY
        return [api_pb2.Device(ID=f"{self.device.name}{i}", health=health) for i in range(self.count)]

    # The DevicePlugin service.

    def GetDevicePluginOptions(  # noqa: N802 - the gRPC method name
        self, request: api_pb2.Empty, context: grpc.ServicerContext
    ) -> api_pb2.DevicePluginOptions:
        return api_pb2.DevicePluginOptions(pre_start_required=False)

    def ListAndWatch(  # noqa: N802 - the gRPC method name
        self, request: api_pb2.Empty, context: grpc.ServicerContext
    ) -> Iterator[api_pb2.ListAndWatchResponse]:
        last = self.healthy()
        yield api_pb2.ListAndWatchResponse(devices=self.devices())
        while context.is_active() and not self._stop.wait(CHECK_SECONDS):
            if self.healthy() != last:
                last = not last
                yield api_pb2.ListAndWatchResponse(devices=self.devices())

    def Allocate(  # noqa: N802 - the gRPC method name
        self, request: api_pb2.AllocateRequest, context: grpc.ServicerContext
    ) -> api_pb2.AllocateResponse:
        spec = api_pb2.DeviceSpec(
            container_path=self.device.path, host_path=self.device.path, permissions=self.device.permissions
        )
        return api_pb2.AllocateResponse(
            container_responses=[
                api_pb2.ContainerAllocateResponse(devices=[spec]) for _ in request.container_requests
            ]
        )

    def PreStartContainer(  # noqa: N802 - the gRPC method name
        self, request: api_pb2.PreStartContainerRequest, context: grpc.ServicerContext
    ) -> api_pb2.PreStartContainerResponse:
        return api_pb2.PreStartContainerResponse()

    # Serving and registering.

    def start(self) -> None:
        """Serve on the plugin socket and register with the kubelet."""
        self._server = serve_unix(
            self.socket, lambda server: api_pb2_grpc.add_DevicePluginServicer_to_server(self, server)
        )
        target = f"unix://{self.plugins_dir / KUBELET_SOCKET}"
        with grpc.insecure_channel(target) as channel:
            api_pb2_grpc.RegistrationStub(channel).Register(
                api_pb2.RegisterRequest(
                    version=API_VERSION,
                    endpoint=self.socket.name,
                    resource_name=self.device.resource,
                    options=api_pb2.DevicePluginOptions(),
                ),
                timeout=REGISTER_TIMEOUT,
            )
        self._log.info("device plugin registered", resource=self.device.resource, healthy=self.healthy())

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.stop(grace=1)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()

    def run(self, stop: threading.Event) -> None:
        """Keep the plugin registered until ``stop``: start (also over a stale socket), and start again
        whenever the kubelet removed the socket."""
        while not stop.is_set():
            if self._server is None or not self.socket.exists():
                if self._server is not None:
                    self._server.stop(grace=0)
                # A socket a killed handler left: nobody serves on it, and the kubelet must hear again.
                with contextlib.suppress(FileNotFoundError):
                    self.socket.unlink()
                try:
                    self.start()
                except (grpc.RpcError, OSError) as err:
                    self._log.error(
                        "device plugin registration failed", resource=self.device.resource, reason=str(err)
                    )
                    with contextlib.suppress(FileNotFoundError):
                        self.socket.unlink()
            stop.wait(CHECK_SECONDS)
        self.stop()
