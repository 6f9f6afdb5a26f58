"""The built-in SSH client (``--local-ssh=false``), on paramiko, over the VM's or VMI's ``portforward``
stream: KubeVirt's host key check, its authentication order (agent, identity file, password) and its
session handling (a command's exit status, or an interactive shell on a pty).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import termios
import threading
import tty
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import paramiko  # type: ignore[import-untyped, unused-ignore]
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from kubevirt.client import KubeClient
from kubevirt.log import get_logger
from kubevirt.virtctl.portforward import TCP, ForwardedPort, Forwarder
from kubevirt.virtctl.portforward import Target as ForwardTarget
from kubevirt.virtctl.ssh.knownhosts import HostKey, KnownHosts, KnownHostsError
from kubevirt.virtctl.ssh.options import SSHError, SSHOptions, Target
from kubevirt.virtctl.streams import MessageStream, StreamError, relay_socket

READ_SIZE = 32 * 1024
HANDSHAKE_TIMEOUT = 30.0
SKIPPING_HOST_KEY_CHECK = "WARNING: skipping hostkey check, provide --known-hosts to fix this"
EXIT_MISSING = "wait: remote command exited without exit status or exit signal"


def _read_stdin() -> bytes:
    try:
        fd = sys.stdin.fileno()
    except (OSError, ValueError):  # a replaced stdin (tests): read what it buffers
        return sys.stdin.buffer.read(READ_SIZE)
    return os.read(fd, READ_SIZE)


def _write(stream: Any) -> Callable[[bytes], None]:
    def write(data: bytes) -> None:
        stream.buffer.write(data)
        stream.buffer.flush()

    return write


def _ask(prompt: str) -> str:
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        raise KnownHostsError("EOF")
    return line


def _read_secret(prompt: str) -> str:
    """Reads a line from the terminal without echo, as Go's ``term.ReadPassword`` does."""
    sys.stdout.write(prompt)
    sys.stdout.flush()
    fd = sys.stdin.fileno()
    try:
        saved = termios.tcgetattr(fd)
    except termios.error as err:
        raise SSHError(str(err.args[-1]).lower()) from None
    quiet = list(saved)
    quiet[3] &= ~termios.ECHO
    try:
        termios.tcsetattr(fd, termios.TCSADRAIN, quiet)
        secret = sys.stdin.readline().rstrip("\n")
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    print(flush=True)
    return secret


@dataclass
class Console:
    """The local side of a session and of the prompts: the process's own standard streams by default."""

    read_stdin: Callable[[], bytes] = _read_stdin
    write_stdout: Callable[[bytes], None] = field(default_factory=lambda: _write(sys.stdout))
    write_stderr: Callable[[bytes], None] = field(default_factory=lambda: _write(sys.stderr))
    ask: Callable[[str], str] = _ask
    read_secret: Callable[[str], str] = _read_secret
    stdin_fd: int | None = None  # the terminal an interactive shell runs on


class Tunnel:
    """A socket whose other end is relayed to the stream, for paramiko to run SSH over."""

    def __init__(self, stream: MessageStream) -> None:
        self.socket, theirs = socket.socketpair()
        self.relay = threading.Thread(
            target=relay_socket, args=(stream, theirs), name="ssh-tunnel", daemon=True
        )
        self.relay.start()

    def close(self, timeout: float = 5.0) -> None:
        """Ends the relay, which closes the stream properly before virtctl exits."""
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()
        self.relay.join(timeout)


def remote_address(stream: MessageStream) -> str:
    """The API server's address the stream is connected to (Go's ``RemoteAddr`` of the connection)."""
    try:
        peer = stream.sock.getpeername()  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return "unknown"
    host, port = peer[0], peer[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _load_private_key(data: bytes, password: bytes | None) -> None:
    """Raises TypeError when the key needs a password, ValueError when it cannot be read."""
    try:
        serialization.load_ssh_private_key(data, password=password)
    except ValueError:
        serialization.load_pem_private_key(data, password=password)


def load_identity(path: str, console: Console) -> Any:
    """The identity file as a paramiko key, asking for its passphrase when it has one."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as err:
        raise SSHError(f"open {path}: {(err.strerror or str(err)).lower()}") from None
    password: bytes | None = None
    try:
        _load_private_key(data, None)
    except TypeError:
        password = console.read_secret(f"Key {path} requires a password: ").encode()
        try:
            _load_private_key(data, password)
        except (TypeError, ValueError):
            raise SSHError("x509: decryption password incorrect") from None
    except (ValueError, UnsupportedAlgorithm):
        raise SSHError("ssh: no key found") from None
    try:
        return paramiko.PKey.from_path(path, password)
    except (paramiko.SSHException, ValueError, TypeError) as err:
        raise SSHError(f"ssh: {err}") from None


def agent_keys() -> tuple[Any, list[Any]]:
    """The ssh-agent at ``$SSH_AUTH_SOCK`` and its keys; none when it is unset or unreachable."""
    path = os.environ.get("SSH_AUTH_SOCK", "")
    if not path:
        return None, []
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.connect(path)
    except OSError as err:
        reason = (err.strerror or str(err)).lower()
        get_logger().error(
            f"no connection to ssh agent, skipping agent authentication: dial unix {path}: connect: {reason}"
        )
        return None, []
    finally:
        probe.close()
    agent = paramiko.Agent()
    return agent, list(agent.get_keys())


@dataclass
class NativeSSH:
    """One SSH connection to the guest, over a stream opened by ``dial``."""

    options: SSHOptions
    target: Target
    dial: Callable[[], MessageStream]
    console: Console = field(default_factory=Console)
    _tunnel: Tunnel | None = field(default=None, init=False, repr=False)
    _transport: Any = field(default=None, init=False, repr=False)

    @property
    def address(self) -> str:
        """The host name the key is checked and recorded under: ``kind/name.namespace:port``."""
        t = self.target
        return f"{t.kind}/{t.name}.{t.namespace}:{self.options.port}"

    def connect(self) -> Any:
        """An authenticated paramiko transport."""
        stream = self.dial()
        remote = remote_address(stream)
        known_hosts = None
        if self.options.known_hosts:
            try:
                known_hosts = KnownHosts.open(self.options.known_hosts)
            except KnownHostsError as err:
                stream.shutdown()
                raise SSHError(str(err)) from None
        else:
            print(SKIPPING_HOST_KEY_CHECK, flush=True)
        logging.getLogger("paramiko").setLevel(logging.CRITICAL)  # failures surface as exceptions
        self._tunnel = Tunnel(stream)
        self._transport = transport = paramiko.Transport(self._tunnel.socket)
        try:
            transport.start_client(timeout=HANDSHAKE_TIMEOUT)
            if known_hosts is not None:
                key = HostKey(transport.get_remote_server_key().asbytes())
                known_hosts.verify(self.address, remote, key, self.console.ask)
            self._authenticate(transport)
        except (paramiko.SSHException, KnownHostsError, SSHError, EOFError, OSError) as err:
            self.close()
            raise SSHError(f"ssh: handshake failed: {err or type(err).__name__}") from None
        return transport

    def close(self) -> None:
        # paramiko leaves the socket open when the server hung up first: the tunnel closes it anyway.
        if self._transport is not None:
            self._transport.close()
        if self._tunnel is not None:
            self._tunnel.close()

    def _authenticate(self, transport: Any) -> None:
        """``none``, then public keys (agent's, then the identity file), then a password, each only when
        the server still offers it; fails with Go's list of the methods attempted."""
        user = self.options.username
        attempted: list[str] = []
        try:
            transport.auth_none(user)
            return
        except paramiko.BadAuthenticationType as err:
            allowed = list(err.allowed_types)
        except paramiko.AuthenticationException:
            allowed = []
        attempted.append("none")
        if "publickey" in allowed:
            agent, keys = agent_keys()
            try:
                if self._try_keys(transport, user, keys, self._identity()):
                    return
            finally:
                if agent is not None:
                    agent.close()
            attempted.append("publickey")
        if "password" in allowed:
            t = self.target
            password = self.console.read_secret(f"{user}@{t.kind}/{t.name}.{t.namespace}'s password: ")
            try:
                transport.auth_password(user, password, fallback=False)
                return
            except paramiko.AuthenticationException:
                attempted.append("password")
        raise SSHError(
            f"ssh: unable to authenticate, attempted methods [{' '.join(attempted)}], "
            "no supported methods remain"
        )

    def _identity(self) -> Callable[[], list[Any]]:
        def load() -> list[Any]:
            path = self.options.identity_file
            # A missing key at the default location is no error; a named one must be there.
            if not self.options.identity_file_provided and not os.path.exists(path):
                get_logger().debug(f"No ssh key at the default location {path!r} found, skipping it.")
                return []
            return [load_identity(path, self.console)]

        return load

    @staticmethod
    def _try_keys(transport: Any, user: str, keys: list[Any], identity: Callable[[], list[Any]]) -> bool:
        for key in keys:
            with contextlib.suppress(paramiko.AuthenticationException):
                transport.auth_publickey(user, key)
                return True
        for key in identity():  # read (and its passphrase asked for) only when the agent's keys failed
            with contextlib.suppress(paramiko.AuthenticationException):
                transport.auth_publickey(user, key)
                return True
        return False

    def run(self, command: str) -> None:
        """Runs ``command``, or an interactive shell without one; a command's failure is an error."""
        transport = self.connect()
        try:
            if command:
                status = self._session(transport, command)
                if status != 0:
                    raise SSHError(EXIT_MISSING if status < 0 else f"Process exited with status {status}")
            else:
                # An interactive shell's own exit status is not virtctl's.
                if self._shell(transport) < 0:
                    raise SSHError(EXIT_MISSING)
        finally:
            self.close()

    def _session(self, transport: Any, command: str) -> int:
        channel = transport.open_session()
        channel.exec_command(command)
        return relay_channel(channel, self.console)

    def _shell(self, transport: Any) -> int:
        fd = self.console.stdin_fd if self.console.stdin_fd is not None else sys.stdin.fileno()
        with raw_terminal(fd):
            columns, lines = terminal_size(fd)
            channel = transport.open_session()
            channel.get_pty(term=os.environ.get("TERM", ""), width=columns, height=lines)
            with resize_on_winch(channel, fd):
                channel.invoke_shell()
                return relay_channel(channel, self.console)


def relay_channel(channel: Any, console: Console) -> int:
    """Copies stdin into the channel and its output out until the command ended and its output is
    drained; returns its exit status (-1 when it sent none)."""

    def output(receive: Callable[[int], bytes], write: Callable[[bytes], None]) -> None:
        with contextlib.suppress(OSError, EOFError):
            while data := receive(READ_SIZE):
                write(data)

    def send_input() -> None:
        # Left running when the command is done: it may be blocked on a terminal that sends nothing.
        with contextlib.suppress(OSError, EOFError):
            while chunk := console.read_stdin():
                channel.sendall(chunk)
            channel.shutdown_write()

    readers = [
        threading.Thread(target=output, args=(channel.recv, console.write_stdout), daemon=True),
        threading.Thread(target=output, args=(channel.recv_stderr, console.write_stderr), daemon=True),
    ]
    for reader in readers:
        reader.start()
    threading.Thread(target=send_input, name="ssh-stdin", daemon=True).start()
    status = int(channel.recv_exit_status())
    for reader in readers:
        reader.join()
    channel.close()
    return status


@contextlib.contextmanager
def raw_terminal(fd: int) -> Iterator[None]:
    """Raw mode for the shell; like KubeVirt, a non-terminal stdin is an error."""
    try:
        saved = termios.tcgetattr(fd)
    except termios.error as err:
        raise SSHError(str(err.args[-1]).lower()) from None
    try:
        tty.setraw(fd, termios.TCSANOW)  # keeps what was typed ahead, as Go's term.MakeRaw does
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def terminal_size(fd: int) -> tuple[int, int]:
    try:
        size = os.get_terminal_size(fd)
    except OSError as err:
        raise SSHError((err.strerror or str(err)).lower()) from None
    return size.columns, size.lines


@contextlib.contextmanager
def resize_on_winch(channel: Any, fd: int) -> Iterator[None]:
    """Tells the server the terminal's new size whenever it changes."""

    def resize(_signum: int, _frame: FrameType | None) -> None:
        try:
            columns, lines = os.get_terminal_size(fd)
        except OSError:
            columns, lines = 80, 24
        with contextlib.suppress(paramiko.SSHException, OSError):
            channel.resize_pty(width=columns, height=lines)

    previous = signal.signal(signal.SIGWINCH, resize)
    try:
        yield
    finally:
        signal.signal(signal.SIGWINCH, previous)


def portforward_dialer(client: KubeClient, target: Target, port: int) -> Callable[[], MessageStream]:
    """Opens the target's ``portforward/<port>/tcp`` stream, as ``virtctl port-forward`` does."""

    def dial() -> MessageStream:
        forwarder = Forwarder(client, ForwardTarget(target.kind, target.name, target.namespace))
        try:
            return forwarder.open(ForwardedPort(TCP, port, port))
        except StreamError as err:
            kind = "VMI" if target.kind == "vmi" else "VM"
            raise SSHError(f"can't access {kind} {target.name}: {err}") from None

    return dial
