"""Scripted serial-console logins to the CirrOS- and Alpine-compatible test guests: the exchanges KubeVirt's
functional tests use with CirrOS and Alpine (``tests/console/login.go``), over any byte stream (a QEMU
serial socket, the console websocket through virt-api)."""

from __future__ import annotations

import re
import socket
import time
from typing import Protocol

import websocket

PROMPT = r"(\$ |\# )"
CIRROS_BANNER = "login as 'cirros' user. default password: 'gocubsgo'. use 'sudo' for root."
POWEROFF_MESSAGE = "The system is going down NOW!"


def ret_value(code: str) -> str:
    """The exit status a command printed with ``echo $?``, followed by the next prompt."""
    return "\n" + code + "\r\n" + ".*" + PROMPT


class Stream(Protocol):
    def send(self, data: bytes) -> None: ...

    def receive(self, timeout: float) -> bytes:
        """What arrived within ``timeout`` (``b""`` if nothing); raises EOFError once the stream ended."""
        ...

    def close(self) -> None: ...


class SocketStream:
    """A connected stream socket (QEMU's serial socket)."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection

    def send(self, data: bytes) -> None:
        self.connection.sendall(data)

    def receive(self, timeout: float) -> bytes:
        self.connection.settimeout(timeout)
        try:
            data = self.connection.recv(4096)
        except TimeoutError:
            return b""
        if not data:
            raise EOFError("the serial socket closed")
        return data

    def close(self) -> None:
        self.connection.close()


class WebSocketStream:
    """KubeVirt's console websocket: the guest's bytes in binary messages both ways."""

    def __init__(self, ws: websocket.WebSocket) -> None:
        self.ws = ws

    def send(self, data: bytes) -> None:
        self.ws.send_binary(data)

    def receive(self, timeout: float) -> bytes:
        self.ws.settimeout(timeout)
        try:
            opcode, data = self.ws.recv_data()
        except websocket.WebSocketTimeoutException:
            return b""
        except websocket.WebSocketConnectionClosedException as err:
            raise EOFError("the console stream ended") from err
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            raise EOFError("the console stream ended")
        return data if isinstance(data, bytes) else data.encode()

    def close(self) -> None:
        self.ws.close()


class Expecter:
    """Sends text and waits for regular expressions in what comes back, keeping a transcript."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.pending = ""
        self.transcript = ""

    def send(self, text: str) -> None:
        self.stream.send(text.encode())

    def expect(self, pattern: str, timeout: float) -> str:
        """Everything up to the first match of ``pattern``, which is consumed."""
        expression = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            found = expression.search(self.pending)
            if found:
                seen, self.pending = self.pending[: found.end()], self.pending[found.end() :]
                return seen
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"{pattern!r} not seen in {timeout:.0f} s; last output {self.pending[-600:]!r}"
                )
            chunk = self.stream.receive(min(left, 1.0)).decode(errors="replace")
            self.pending += chunk
            self.transcript += chunk


def configure_console(expecter: Expecter, *, sudo: bool, timeout: float = 30.0) -> None:
    """What KubeVirt does right after logging in: a wide terminal and a quiet kernel log."""
    expecter.send("stty cols 500 rows 500\n")
    expecter.expect(PROMPT, timeout)
    expecter.send("echo $?\n")
    expecter.expect(ret_value("0"), timeout)
    expecter.send(f"{'sudo ' if sudo else ''}dmesg -n 1\n")
    expecter.expect(PROMPT, timeout)
    expecter.send("echo $?\n")
    expecter.expect(ret_value("0"), timeout)


def login_to_cirros(expecter: Expecter, hostname: str, timeout: float = 180.0) -> None:
    """CirrOS's exchange: the banner, ``<hostname> login:``, ``cirros``/``gocubsgo``, a prompt; then
    the console set up with ``sudo``."""
    expecter.send("\n")
    expecter.expect(re.escape(CIRROS_BANNER), timeout)
    expecter.send("\n")
    expecter.expect(re.escape(hostname) + " login:", timeout)
    expecter.send("cirros\n")
    expecter.expect("Password:", timeout)
    expecter.send("gocubsgo\n")
    expecter.expect(PROMPT, timeout)
    configure_console(expecter, sudo=True)


def login_to_alpine(expecter: Expecter, hostname: str, timeout: float = 180.0) -> None:
    """Alpine's exchange: ``localhost login: `` (or the hostname's), ``root`` without a password, and the
    ``<host>:~# `` prompt; then the console set up."""
    host = f"(localhost|{re.escape(hostname)})"
    expecter.send("\n")
    expecter.expect(host + " login: ", timeout)
    expecter.send("root\n")
    expecter.expect(host + r":~\# ", timeout)
    configure_console(expecter, sudo=False)


def run(expecter: Expecter, command: str, timeout: float = 30.0) -> str:
    """The output of ``command`` (without the echoed command line), once the next prompt came back."""
    expecter.send(command + "\n")
    seen = expecter.expect(PROMPT, timeout)
    lines = seen.replace("\r", "").split("\n")
    return "\n".join(lines[1:-1])


def virt_api_console(kubeconfig: str, namespace: str, name: str, timeout: float = 60.0) -> Expecter:
    """An expecter on VMI ``namespace/name``'s serial console through virt-api's console subresource (as
    ``virtctl console`` connects, waiting up to ``timeout`` seconds for the VMI to be reachable)."""
    # Imported here: the client and virtctl's streams are needed only by the tests that reach a cluster.
    from kubevirt.client import KubeClient
    from kubevirt.virtctl.console import connect_console

    client = KubeClient.from_kubeconfig(kubeconfig)
    return Expecter(WebSocketStream(connect_console(client, namespace, name, timeout)))


def cirros_login(kubeconfig: str, namespace: str, name: str) -> Expecter:
    """VMI ``namespace/name``'s console through virt-api, logged in to its CirrOS-compatible guest."""
    expecter = virt_api_console(kubeconfig, namespace, name)
    login_to_cirros(expecter, name)
    return expecter
