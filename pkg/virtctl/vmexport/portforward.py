"""``--port-forward``: the export server's pod port on a local port, through the API server.

As KubeVirt's virtctl: wait for the export's service, take the first pod its selector finds, resolve
the service's port 443 to the pod's port (8443 for the exporter), listen on 127.0.0.1 (a random port for
``--local-port 0``) and forward each connection to the pod's ``portforward`` subresource.

KubeVirt speaks SPDY there; this forwarder speaks the API server's websocket protocol for the same
subresource (``v4.channel.k8s.io``, one websocket per connection): every message starts with a channel
byte, 0 for data and 1 for errors, and the first two bytes on each channel are the port, little-endian.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click
import websocket

from kubevirt.client import JSON, PODS, ApiError, KubeReader, NotFoundError
from kubevirt.client.connection import Connection
from kubevirt.client.resources import SERVICES
from kubevirt.virtctl.streams import MessageStream, StreamError, dial, relay_socket, websocket_url
from kubevirt.virtctl.vmexport.exports import PROCESSING_WAIT_INTERVAL, get_export, poll
from kubevirt.virtctl.vmexport.flags import VMExportError, VMExportInfo
from kubevirt.virtctl.vmexport.printer import Printer
from kubevirt_api.export.v1beta1.types import PHASE_READY

PORT_FORWARD_SUBPROTOCOL = "v4.channel.k8s.io"
DATA_CHANNEL, ERROR_CHANNEL = 0, 1
PORT_PREFIX_LENGTH = 2
SERVICE_PORT = 443
LOCALHOST = "127.0.0.1"
STOP_TIMEOUT = 5.0

Dialer = Callable[[str, int], MessageStream]


class ChannelStream:
    """One forwarded connection's websocket, seen as a plain byte stream: sends go out on the data
    channel, data received comes back without its channel byte and port prefix, and what arrives on the
    error channel goes to ``on_error``."""

    def __init__(self, ws: MessageStream, port: int, on_error: Callable[[str], None]) -> None:
        self._ws = ws
        self._port = port
        self._on_error = on_error
        self._prefix_left = {DATA_CHANNEL: PORT_PREFIX_LENGTH, ERROR_CHANNEL: PORT_PREFIX_LENGTH}
        self._prefix = {DATA_CHANNEL: b"", ERROR_CHANNEL: b""}

    def recv_data(self) -> tuple[int, bytes]:
        while True:
            opcode, message = self._ws.recv_data()
            if opcode not in (websocket.ABNF.OPCODE_BINARY, websocket.ABNF.OPCODE_TEXT):
                return opcode, message
            if not message:
                continue
            channel, payload = message[0], self._after_prefix(message[0], bytes(message[1:]))
            if channel == DATA_CHANNEL and payload:
                return websocket.ABNF.OPCODE_BINARY, payload
            if channel == ERROR_CHANNEL and payload:
                self._on_error(payload.decode(errors="replace"))
            elif channel not in (DATA_CHANNEL, ERROR_CHANNEL):
                raise OSError(f"unexpected channel number: {channel}")

    def _after_prefix(self, channel: int, payload: bytes) -> bytes:
        """``payload`` less what is still owed of the channel's port prefix (which must name our port)."""
        left = self._prefix_left.get(channel, 0)
        if not left:
            return payload
        self._prefix[channel] += payload[:left]
        self._prefix_left[channel] = left - len(payload[:left])
        if not self._prefix_left[channel]:
            (port,) = struct.unpack("<H", self._prefix[channel])
            if port != self._port:
                raise OSError(f"unexpected port number in initial channel frame: {port}")
        return payload[left:]

    def send_binary(self, payload: bytes) -> Any:
        return self._ws.send_binary(bytes([DATA_CHANNEL]) + payload)

    def send_close(self) -> None:
        self._ws.send_close()

    def shutdown(self) -> Any:
        return self._ws.shutdown()


def pod_dialer(connection: Connection, namespace: str) -> Dialer:
    """Opens ``pods/<pod>/portforward?ports=<port>`` for one connection."""

    def open_forward(pod: str, port: int) -> MessageStream:
        path = PODS.path(namespace, pod, "portforward")
        url = websocket_url(connection.host, path, {"ports": str(port)})
        stream = dial(connection, url, [PORT_FORWARD_SUBPROTOCOL])
        # The handshake's timeout must not stay: a download whose server pauses longer would be cut.
        stream.settimeout(None)
        return stream

    return open_forward


def selector_string(selector: dict[str, str]) -> str:
    """``labels.SelectorFromSet(...).String()``: ``k=v`` pairs sorted by key."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector.items()))


def target_port(service: JSON, pod: JSON, port: int) -> int:
    """kubectl's ``LookupContainerPortNumberByServicePort``: the pod port behind the service's ``port``."""
    spec = service.get("spec") or {}
    for entry in spec.get("ports") or []:
        if entry.get("port") != port:
            continue
        if spec.get("clusterIP") == "None":
            return port
        target = entry.get("targetPort")
        if isinstance(target, int) or target is None:
            return target or port
        return _named_container_port(pod, str(target))
    name = (service.get("metadata") or {}).get("name", "")
    raise VMExportError(f"Service {name} does not have a service port {port}")


def _named_container_port(pod: JSON, name: str) -> int:
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        for entry in container.get("ports") or []:
            if entry.get("name") == name:
                return int(entry.get("containerPort", 0))
    pod_name = (pod.get("metadata") or {}).get("name", "")
    raise VMExportError(f"Pod '{pod_name}' does not have a named port '{name}'")


def wait_for_service(
    api: KubeReader, info: VMExportInfo, printer: Printer, *, sleep: Callable[[float], None] = time.sleep
) -> JSON:
    """The export's service, once the export is ready and names it."""
    found: list[JSON] = []

    def ready() -> bool:
        export = get_export(api, info)
        if export is None:
            return False
        status = export.get("status") or {}
        if status.get("phase") != PHASE_READY:
            printer.say(f"waiting for VM Export {info.name} status to be ready...\n")
            return False
        service_name = str(status.get("serviceName") or "")
        if not service_name:
            printer.say(f"waiting for VM Export {info.name} service name to be set...\n")
            return False
        try:
            service = api.get(SERVICES, info.namespace, service_name)
        except NotFoundError:
            printer.say(f"waiting for service {service_name} to be ready before port-forwarding...\n")
            return False
        printer.say(f"service {service_name} is ready for port-forwarding\n")
        found.append(service)
        return True

    poll(ready, PROCESSING_WAIT_INTERVAL, info.readiness_timeout, sleep=sleep)
    return found[-1]


def first_pod(api: KubeReader, namespace: str, service: JSON) -> JSON:
    selector = selector_string(dict((service.get("spec") or {}).get("selector") or {}))
    try:
        pods, _ = api.list(PODS, namespace, label_selector=selector)
    except ApiError as err:
        raise VMExportError(f"failed to list pods: {err.message or err}") from None
    if not pods:
        raise VMExportError(f"no pods found for the service {service['metadata']['name']}")
    return pods[0]


@dataclass
class PortForwarder:
    """Listens on 127.0.0.1 and forwards every connection to ``pod``'s ``remote`` port."""

    dialer: Dialer
    pod: str
    remote: int
    listener: socket.socket
    _connections: list[tuple[socket.socket, threading.Thread]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def local(self) -> int:
        return int(self.listener.getsockname()[1])

    def start(self) -> None:
        _say_stderr(f"Forwarding from {LOCALHOST}:{self.local} -> {self.remote}\n")
        threading.Thread(target=self._serve, name="vmexport-port-forward", daemon=True).start()

    def stop(self) -> None:
        """Stops listening and ends the forwarded connections: each stream is closed with a close frame
        once its local side is shut down."""
        with contextlib.suppress(OSError):
            self.listener.close()
        with self._lock:
            connections, self._connections = self._connections, []
        for connection, _ in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)  # wakes the relay blocked reading it
        deadline = time.monotonic() + STOP_TIMEOUT
        for _, relay in connections:
            relay.join(max(deadline - time.monotonic(), 0.0))

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # stopped
            _say_stderr(f"Handling connection for {self.local}\n")
            relay = threading.Thread(target=self._forward, args=(connection,), daemon=True)
            with self._lock:
                self._connections.append((connection, relay))
            relay.start()

    def _forward(self, connection: socket.socket) -> None:
        try:
            stream = ChannelStream(self.dialer(self.pod, self.remote), self.remote, self._report)
        except StreamError as err:
            self._report(f"error upgrading connection: {err}")
            connection.close()
            return
        relay_socket(stream, connection)

    def _report(self, message: str) -> None:
        _say_stderr(f"an error occurred forwarding {self.local} -> {self.remote}: {message}\n")


def _say_stderr(text: str) -> None:
    click.echo(text, nl=False, err=True)


def listen(local_port: int) -> socket.socket:
    try:
        return socket.create_server((LOCALHOST, local_port))
    except OSError as err:
        raise VMExportError(f"unable to listen on port {local_port}: {err.strerror or err}") from None


def setup_port_forward(
    api: KubeReader,
    info: VMExportInfo,
    printer: Printer,
    dialer: Dialer,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> PortForwarder:
    """A running forwarder to the export's pod; with ``--local-port 0`` ``info.service_url`` becomes the
    port it got."""
    service = wait_for_service(api, info, printer, sleep=sleep)
    pod = first_pod(api, info.namespace, service)
    remote = target_port(service, pod, SERVICE_PORT)
    forwarder = PortForwarder(dialer, pod["metadata"]["name"], remote, listen(int(info.local_port)))
    forwarder.start()
    printer.say("Port forwarding is ready.\n")
    if int(info.local_port) == 0:
        info.service_url = f"{LOCALHOST}:{forwarder.local}"
    return forwarder
