"""``virtctl port-forward type/name[/namespace] [protocol/]localPort[:targetPort]...``, as KubeVirt's.

Each local TCP port listens on ``--address``; every connection accepted opens its own websocket to the
VM's or VMI's ``portforward/<targetPort>/<protocol>`` subresource (virt-api dials the guest) and is
relayed until either side closes. ``--stdio`` relays stdin and stdout instead, for one port (what
``ssh -o ProxyCommand`` needs). UDP forwarding is not offered by this virtctl.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from dataclasses import dataclass
from typing import Any

import click
import websocket

from kubevirt.client import KubeClient
from kubevirt.log import get_logger
from kubevirt.virtctl.clientconfig import client_flags, connect, flags_from
from kubevirt.virtctl.ssh.goflags import GoFlagsCommand, bool_flag
from kubevirt.virtctl.streams import (
    VMIS,
    StreamError,
    open_stream,
    pump,
    relay_socket,
    write_stdout,
)

TCP, UDP = "tcp", "udp"
KINDS = {
    "vm": "vm",
    "vms": "vm",
    "virtualmachine": "vm",
    "virtualmachines": "vm",
    "vmi": "vmi",
    "vmis": "vmi",
    "virtualmachineinstance": "vmi",
    "virtualmachineinstances": "vmi",
}
RESOURCES = {"vm": "virtualmachines", "vmi": VMIS}
READ_SIZE = 32 * 1024


class PortForwardError(Exception):
    """What virtctl prints before exiting 1."""


@dataclass(frozen=True)
class Target:
    kind: str
    name: str
    namespace: str


@dataclass(frozen=True)
class ForwardedPort:
    protocol: str
    local: int
    remote: int

    @property
    def subresource(self) -> str:
        return f"portforward/{self.remote}/{self.protocol}"


def parse_target(text: str) -> Target:
    """``type/name[/namespace]``; a dot in a two-part target is the legacy ``name.namespace``."""
    if not text:
        raise PortForwardError("target cannot be empty")
    parts = text.split("/")
    if len(parts) == 1:
        raise PortForwardError("target must contain type and name separated by '/'")
    if len(parts) > 3:
        raise PortForwardError("target is not valid with more than two '/'")
    namespace = parts[2] if len(parts) == 3 else ""
    if len(parts) == 3 and not namespace:
        raise PortForwardError("namespace cannot be empty")
    kind = KINDS.get(parts[0].lower())
    if kind is None:
        raise PortForwardError(f"unsupported resource type '{parts[0]}'")
    name = parts[1]
    if not name:
        raise PortForwardError("name cannot be empty")
    if len(parts) == 2 and "." in name:
        get_logger().warning(
            "A dot in target without specifying a namespace activates legacy parsing of name and namespace."
        )
        name, namespace = name.rsplit(".", 1)
    return Target(kind, name, namespace)


def parse_port(text: str) -> ForwardedPort:
    protocol, _, ports = text.rpartition("/")
    numbers = [part for part in ports.split(":") if part]
    if not numbers:
        raise PortForwardError("invalid port, missing local and/or remote port")
    try:
        local = int(numbers[0])
        remote = int(numbers[1]) if len(numbers) > 1 else local
    except ValueError as err:
        raise PortForwardError(f"invalid port {text!r}: {err}") from None
    return ForwardedPort(protocol or TCP, local, remote)


@dataclass
class Forwarder:
    client: KubeClient
    target: Target

    def open(self, port: ForwardedPort) -> websocket.WebSocket:
        stream = open_stream(
            self.client,
            self.target.namespace,
            self.target.name,
            port.subresource,
            resource=RESOURCES[self.target.kind],
        )
        stream.settimeout(None)
        return stream

    def listen(self, address: str, port: ForwardedPort) -> socket.socket:
        if port.protocol != TCP:
            raise PortForwardError(f"unknown protocol: {port.protocol}")
        try:
            return socket.create_server((address, port.local))
        except OSError as err:
            raise PortForwardError(f"listen tcp {address}:{port.local}: {err.strerror}") from None

    def serve(self, listener: socket.socket, port: ForwardedPort) -> None:
        """Accepts connections and gives each its own stream, until the listener closes."""
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            try:
                stream = self.open(port)
            except StreamError as err:
                t = self.target
                click.echo(f"can't access {t.kind}/{t.name}.{t.namespace}: {err}", err=True)
                connection.close()
                return
            threading.Thread(target=relay_socket, args=(stream, connection), daemon=True).start()

    def stdio(self, port: ForwardedPort) -> None:
        pump(self.open(port), lambda: os.read(sys.stdin.fileno(), READ_SIZE), write_stdout)


@click.command(
    name="port-forward",
    cls=GoFlagsCommand,  # ssh's ProxyCommand passes --stdio=true
    help="Forward local ports to a virtualmachine or virtualmachineinstance.",
)
@click.argument("target")
@click.argument("ports", nargs=-1, required=True)
@bool_flag("--stdio", help="Forward the tunnel to stdout/stdin; only works with a single port.")
@click.option(
    "--address", default="127.0.0.1", show_default=True, help="The address the local ports open on."
)
@client_flags
@click.pass_context
def port_forward(
    ctx: click.Context, /, target: str, ports: tuple[str, ...], stdio: bool, address: str, **flags: Any
) -> None:
    try:
        parsed = parse_target(target)
        forwarded = [parse_port(port) for port in ports]
        client, namespace = connect(flags_from(ctx, **flags))
        forwarder = Forwarder(client, Target(parsed.kind, parsed.name, parsed.namespace or namespace))
        if stdio:
            if len(forwarded) != 1:
                raise PortForwardError("only one port supported when forwarding to stdout")
            forwarder.stdio(forwarded[0])
            return
        listeners = [(forwarder.listen(address, port), port) for port in forwarded]
    except (PortForwardError, StreamError) as err:
        click.echo(str(err), err=True)
        sys.exit(1)
    for listener, port in listeners:
        threading.Thread(target=forwarder.serve, args=(listener, port), daemon=True).start()
    try:
        threading.Event().wait()  # until Ctrl+C
    except KeyboardInterrupt:
        return
