"""A device plugin registers with a (fake) kubelet and serves its devices over the v1beta1 API."""

from __future__ import annotations

import threading
from pathlib import Path

import grpc

from kubevirt.handler_launcher_com.server import serve_unix
from kubevirt.virt_handler.device_manager.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from kubevirt.virt_handler.device_manager.plugin import KUBELET_SOCKET, DevicePlugin, HostDevice


class FakeKubelet(api_pb2_grpc.RegistrationServicer):
    def __init__(self) -> None:
        self.requests: list[api_pb2.RegisterRequest] = []

    def Register(  # noqa: N802 - the gRPC method name
        self, request: api_pb2.RegisterRequest, context: grpc.ServicerContext
    ) -> api_pb2.Empty:
        self.requests.append(request)
        return api_pb2.Empty()


def test_registers_lists_and_allocates(tmp_path: Path) -> None:
    plugins_dir = tmp_path / "dp"
    dev_root = tmp_path / "root"
    (dev_root / "dev/net").mkdir(parents=True)
    (dev_root / "dev/net/tun").touch()
    kubelet = FakeKubelet()
    server = serve_unix(
        plugins_dir / KUBELET_SOCKET, lambda s: api_pb2_grpc.add_RegistrationServicer_to_server(kubelet, s)
    )
    tun = DevicePlugin(HostDevice("tun", "/dev/net/tun"), plugins_dir=plugins_dir, count=3, dev_root=dev_root)
    vhost = DevicePlugin(
        HostDevice("vhost-net", "/dev/vhost-net"), plugins_dir=plugins_dir, count=2, dev_root=dev_root
    )
    try:
        tun.start()
        vhost.start()
        assert [(r.version, r.endpoint, r.resource_name) for r in kubelet.requests] == [
            ("v1beta1", "kubevirt-tun.sock", "devices.kubevirt.io/tun"),
            ("v1beta1", "kubevirt-vhost-net.sock", "devices.kubevirt.io/vhost-net"),
        ]
        with grpc.insecure_channel(f"unix://{tun.socket}") as channel:
            stub = api_pb2_grpc.DevicePluginStub(channel)
            first = next(iter(stub.ListAndWatch(api_pb2.Empty(), timeout=5)))
            assert [(d.ID, d.health) for d in first.devices] == [
                ("tun0", "Healthy"),
                ("tun1", "Healthy"),
                ("tun2", "Healthy"),
            ]
            request = api_pb2.AllocateRequest(
                container_requests=[api_pb2.ContainerAllocateRequest(devicesIDs=["tun1"])]
            )
            (response,) = stub.Allocate(request, timeout=5).container_responses
            (spec,) = response.devices
            assert (spec.host_path, spec.container_path, spec.permissions) == (
                "/dev/net/tun",
                "/dev/net/tun",
                "mrw",
            )
        # /dev/vhost-net is absent: advertised, but unhealthy (so never allocated).
        assert {d.health for d in vhost.devices()} == {"Unhealthy"}
    finally:
        tun.stop()
        vhost.stop()
        server.stop(grace=0)


def test_run_registers_again_after_the_kubelet_removed_the_socket(tmp_path: Path) -> None:
    plugins_dir = tmp_path / "dp"
    kubelet = FakeKubelet()
    server = serve_unix(
        plugins_dir / KUBELET_SOCKET, lambda s: api_pb2_grpc.add_RegistrationServicer_to_server(kubelet, s)
    )
    plugin = DevicePlugin(HostDevice("kvm", "/dev/kvm"), plugins_dir=plugins_dir, count=1)
    plugin.start()
    plugin.socket.unlink()  # what a restarting kubelet does to plugin sockets
    stop = threading.Event()
    stop.set()  # one pass of the loop
    plugin.run(stop)
    assert len(kubelet.requests) == 1  # stopped before looking again
    stop.clear()
    runner = threading.Thread(target=plugin.run, args=(stop,))
    runner.start()
    try:
        for _ in range(100):
            if len(kubelet.requests) == 2:
                break
            threading.Event().wait(0.05)
        assert len(kubelet.requests) == 2
    finally:
        stop.set()
        runner.join(10)
        server.stop(grace=0)


def test_run_replaces_the_socket_a_killed_handler_left_and_registers(tmp_path: Path) -> None:
    plugins_dir = tmp_path / "dp"
    kubelet = FakeKubelet()
    server = serve_unix(
        plugins_dir / KUBELET_SOCKET, lambda s: api_pb2_grpc.add_RegistrationServicer_to_server(kubelet, s)
    )
    plugin = DevicePlugin(HostDevice("kvm", "/dev/kvm"), plugins_dir=plugins_dir, count=1)
    plugin.socket.write_bytes(b"")  # the earlier handler's socket path, nobody serving on it
    stop = threading.Event()
    runner = threading.Thread(target=plugin.run, args=(stop,))
    runner.start()
    try:
        for _ in range(100):
            if kubelet.requests:
                break
            threading.Event().wait(0.05)
        assert [r.resource_name for r in kubelet.requests] == ["devices.kubevirt.io/kvm"]
    finally:
        stop.set()
        runner.join(10)
        server.stop(grace=0)
