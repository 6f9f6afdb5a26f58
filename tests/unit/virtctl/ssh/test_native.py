"""The built-in client (``--local-ssh=false``) and the local ``ssh``/``scp`` against a real SSH server:
a paramiko server on loopback plays the guest's sshd and runs commands with ``sh`` in a directory playing
the guest user's home (so ``scp -t``/``scp -f`` are the real binary's). The built-in client reaches it
through a stream object standing for virt-api's port-forward; the commands run end to end reach it
through a fake virt-api serving that stream as a websocket.

Covered: a command's streams and exit status, the known_hosts check and its prompt, the authentication
order, an interactive shell on a pty, SCP both ways, and ``virtctl ssh``/``scp`` through the websocket,
including the local ``ssh``/``scp`` with ``virtctl port-forward --stdio`` as their ProxyCommand."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import hashlib
import os
import pty
import shutil
import socket
import stat
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paramiko  # type: ignore[import-untyped, unused-ignore]
import pytest
import websocket
import yaml
from aiohttp import WSMsgType, web
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from kubevirt.virtctl.root import root
from kubevirt.virtctl.ssh import wrapped
from kubevirt.virtctl.ssh.native import SKIPPING_HOST_KEY_CHECK, Console, NativeSSH
from kubevirt.virtctl.ssh.options import SSHError, SSHOptions, Target
from kubevirt.virtctl.ssh.scp import Transfer, native_scp

pytestmark = pytest.mark.timeout(60)

USER, PASSWORD = "cirros", "secret"
TARGET = Target("vmi", "testvmi", "ns")
# The guest runs this machine's scp, and the local-client tests its ssh/scp.
needs_scp = pytest.mark.skipif(shutil.which("scp") is None, reason="needs the OpenSSH scp")
needs_ssh = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")


class GuestServer:
    """Accepts SSH connections and runs ``exec`` requests as ``sh -c`` in ``home``; a ``shell`` request
    answers with the pty it was given and ends with status 5 once it reads ``exit``."""

    def __init__(self, home: Path, host_key: Any, authorized: list[Any], path: str | None = None) -> None:
        self.home = home
        self.host_key = host_key
        self.authorized = {key.asbytes() for key in authorized}
        self.path = path or os.environ["PATH"]
        self.commands: list[str] = []
        self.ptys: list[tuple[str, int, int]] = []
        self.resizes: list[tuple[int, int]] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.transports: list[Any] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            transport = paramiko.Transport(connection)
            transport.add_server_key(self.host_key)
            self.transports.append(transport)
            with contextlib.suppress(paramiko.SSHException, EOFError, OSError):
                transport.start_server(server=_Handler(self))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self.listener.close()
        for transport in self.transports:
            transport.close()

    def run(self, channel: Any, command: str) -> None:
        process = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=self.home,
            env={"PATH": self.path, "HOME": str(self.home)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
        assert stdin is not None
        assert stdout is not None
        assert stderr is not None

        def feed() -> None:
            with contextlib.suppress(OSError, EOFError):
                while data := channel.recv(32768):
                    stdin.write(data)
                    stdin.flush()
            with contextlib.suppress(OSError):
                stdin.close()

        def drain(fd: int, send: Any) -> None:
            while data := os.read(fd, 32768):
                send(data)

        threading.Thread(target=feed, daemon=True).start()
        outputs = [
            threading.Thread(target=drain, args=(stdout.fileno(), channel.sendall)),
            threading.Thread(target=drain, args=(stderr.fileno(), channel.sendall_stderr)),
        ]
        for output in outputs:
            output.start()
        for output in outputs:
            output.join()
        status = process.wait()
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):  # the client may be gone
            channel.send_exit_status(status)
            channel.shutdown_write()
            channel.close()

    def shell(self, channel: Any) -> None:
        term, width, height = self.ptys[-1]
        channel.sendall(f"pty {term} {width}x{height}\r\n".encode())
        typed = b""
        while b"exit" not in typed:
            data = channel.recv(1024)
            if not data:
                break
            typed += data
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            channel.send_exit_status(5)
            channel.close()


class _Handler(paramiko.ServerInterface):  # type: ignore[misc, unused-ignore]
    def __init__(self, guest: GuestServer) -> None:
        self.guest = guest

    def get_allowed_auths(self, username: str) -> str:
        return "publickey,password"

    def check_auth_none(self, username: str) -> int:
        return paramiko.AUTH_FAILED  # type: ignore[no-any-return]

    def check_auth_publickey(self, username: str, key: Any) -> int:
        ok = username == USER and key.asbytes() in self.guest.authorized
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED  # type: ignore[no-any-return]

    def check_auth_password(self, username: str, password: str) -> int:
        ok = username == USER and password == PASSWORD
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED  # type: ignore[no-any-return]

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return paramiko.OPEN_SUCCEEDED  # type: ignore[no-any-return]

    def check_channel_exec_request(self, channel: Any, command: bytes) -> bool:
        self.guest.commands.append(command.decode())
        threading.Thread(target=self.guest.run, args=(channel, command.decode()), daemon=True).start()
        return True

    def check_channel_pty_request(self, channel: Any, term: bytes, width: int, height: int, *_: Any) -> bool:
        self.guest.ptys.append((term.decode(), width, height))
        return True

    def check_channel_shell_request(self, channel: Any) -> bool:
        threading.Thread(target=self.guest.shell, args=(channel,), daemon=True).start()
        return True

    def check_channel_window_change_request(self, channel: Any, width: int, height: int, *_: Any) -> bool:
        self.guest.resizes.append((width, height))
        return True


class FakeStream:
    """A port-forward stream as the relays use it, over a plain TCP connection to the guest."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))

    def recv_data(self) -> tuple[int, bytes]:
        data = self.sock.recv(65536)
        if not data:
            return websocket.ABNF.OPCODE_CLOSE, b""
        return websocket.ABNF.OPCODE_BINARY, data

    def send_binary(self, payload: bytes) -> None:
        self.sock.sendall(payload)

    def send_close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def shutdown(self) -> None:
        self.sock.close()


def ed25519_key_file(path: Path, passphrase: bytes | None = None) -> Any:
    """Writes a new ed25519 private key in OpenSSH format; returns it as a paramiko key."""
    key = ed25519.Ed25519PrivateKey.generate()
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase) if passphrase else serialization.NoEncryption()
    )
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, encryption)
    )
    path.chmod(0o600)
    return paramiko.PKey.from_path(str(path), passphrase)


@dataclass
class Keys:
    host: Any
    client: Any
    client_file: Path
    other_host: Any = field(default=None)


@pytest.fixture(scope="session")
def host_keys() -> tuple[Any, Any]:
    return paramiko.ECDSAKey.generate(), paramiko.ECDSAKey.generate()


@pytest.fixture
def keys(tmp_path: Path, host_keys: tuple[Any, Any]) -> Keys:
    client_file = tmp_path / "id_ed25519"
    return Keys(host_keys[0], ed25519_key_file(client_file), client_file, host_keys[1])


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "guest-home"
    path.mkdir()
    return path


@pytest.fixture
def guest(home: Path, keys: Keys) -> Iterator[GuestServer]:
    server = GuestServer(home, keys.host, [keys.client])
    yield server
    server.close()


class FakeVirtApi:
    """virt-api's VMI/VM ``portforward`` subresource on loopback: each websocket is bridged to the guest."""

    def __init__(self, guest_port: int) -> None:
        self.guest_port = guest_port
        self.paths: list[str] = []
        self._loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_get(
            "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/{resource}/{name}/portforward/{port}/{proto}",
            self._handle,
        )
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = int(self._runner.addresses[0][1])
        threading.Thread(target=self._loop.run_forever, daemon=True).start()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.path)
        ws = web.WebSocketResponse(protocols=["plain.kubevirt.io"])
        await ws.prepare(request)
        reader, writer = await asyncio.open_connection("127.0.0.1", self.guest_port)

        async def to_guest() -> None:
            async for message in ws:
                if message.type == WSMsgType.BINARY:
                    writer.write(message.data)
                    await writer.drain()

        async def from_guest() -> None:
            while data := await reader.read(65536):
                await ws.send_bytes(data)

        # Either side ending ends the bridge, as virt-api's relay does.
        tasks = [asyncio.ensure_future(to_guest()), asyncio.ensure_future(from_guest())]
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        writer.close()
        await ws.close()
        return ws

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)


@pytest.fixture
def virt_api(guest: GuestServer) -> Iterator[FakeVirtApi]:
    api = FakeVirtApi(guest.port)
    yield api
    api.close()


@pytest.fixture
def api_kubeconfig(tmp_path: Path, virt_api: FakeVirtApi) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{virt_api.port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ns"}}],
        "current-context": "x",
    }
    path = tmp_path / "api-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@dataclass
class Recorder:
    """A console whose input is given up front and whose output and prompts are kept."""

    stdin: bytes = b""
    answers: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    prompts: list[str] = field(default_factory=list)

    def console(self) -> Console:
        def read() -> bytes:
            data, self.stdin = self.stdin, b""
            return data

        def ask(prompt: str) -> str:
            self.prompts.append(prompt)
            return self.answers.pop(0) + "\n"

        def secret(prompt: str) -> str:
            self.prompts.append(prompt)
            return self.secrets.pop(0)

        return Console(read, self.out.extend, self.err.extend, ask, secret)


@pytest.fixture(autouse=True)
def no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def options(keys: Keys, known_hosts: str = "", **changes: object) -> SSHOptions:
    values: dict[str, object] = {
        "username": USER,
        "identity_file": str(keys.client_file),
        "identity_file_provided": True,
        "known_hosts": known_hosts,
        "wrap_local_ssh": False,
    }
    values.update(changes)
    return SSHOptions(**values)  # type: ignore[arg-type]


def client(guest: GuestServer, opts: SSHOptions, recorder: Recorder, target: Target = TARGET) -> NativeSSH:
    return NativeSSH(opts, target, lambda: FakeStream(guest.port), recorder.console())


def test_a_command_gets_stdin_and_gives_its_output_and_exit_status(guest: GuestServer, keys: Keys) -> None:
    recorder = Recorder(stdin=b"hello from stdin")
    client(guest, options(keys), recorder).run("cat; echo oops >&2")
    assert (bytes(recorder.out), bytes(recorder.err)) == (b"hello from stdin", b"oops\n")
    assert guest.commands == ["cat; echo oops >&2"]
    with pytest.raises(SSHError) as failed:
        client(guest, options(keys), Recorder()).run("echo partial; exit 3")
    assert str(failed.value) == "Process exited with status 3"


def test_without_known_hosts_the_check_is_skipped_with_kubevirt_s_warning(
    guest: GuestServer, keys: Keys, capsys: pytest.CaptureFixture[str]
) -> None:
    client(guest, options(keys, known_hosts=""), Recorder()).run("true")
    assert capsys.readouterr().out == SKIPPING_HOST_KEY_CHECK + "\n"


def fingerprint(key: object) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()  # type: ignore[attr-defined]
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def test_an_unknown_host_key_is_recorded_once_the_user_says_yes(
    guest: GuestServer, keys: Keys, tmp_path: Path
) -> None:
    known_hosts = tmp_path / "ssh" / "kubevirt_known_hosts"
    known_hosts.parent.mkdir()
    recorder = Recorder(answers=["maybe", "yes"])
    client(guest, options(keys, str(known_hosts)), recorder).run("true")
    question = (
        f"The authenticity of host 'vmi/testvmi.ns:22 (127.0.0.1:{guest.port})' can't be established.\n"
        f"ECDSA key fingerprint is {fingerprint(keys.host)}.\n"
        "Are you sure you want to continue connecting (yes/no)? "
    )
    assert recorder.prompts == [question, "Please reply with either yes or no.\n" + question]
    line = f"vmi/testvmi.ns {keys.host.get_name()} {keys.host.get_base64()}\n"
    assert known_hosts.read_text() == line

    # Known now: no question; another port is another entry.
    again = Recorder()
    client(guest, options(keys, str(known_hosts)), again).run("true")
    assert again.prompts == []
    client(guest, options(keys, str(known_hosts), port=2222), Recorder(answers=["yes"])).run("true")
    assert known_hosts.read_text().splitlines()[1].startswith("[vmi/testvmi.ns]:2222 ecdsa-sha2-nistp256 ")


def test_a_changed_host_key_is_refused(guest: GuestServer, keys: Keys, tmp_path: Path) -> None:
    known_hosts = tmp_path / "known"
    known_hosts.write_text(f"vmi/testvmi.ns {keys.other_host.get_name()} {keys.other_host.get_base64()}\n")
    with pytest.raises(SSHError) as refused:
        client(guest, options(keys, str(known_hosts)), Recorder()).run("true")
    assert str(refused.value) == "ssh: handshake failed: knownhosts: key mismatch"
    assert guest.commands == []


def test_answering_no_refuses_the_host(guest: GuestServer, keys: Keys, tmp_path: Path) -> None:
    known_hosts = tmp_path / "known"
    with pytest.raises(SSHError) as refused:
        client(guest, options(keys, str(known_hosts)), Recorder(answers=["no"])).run("true")
    assert str(refused.value) == "ssh: handshake failed: Host key verification failed."
    assert known_hosts.read_text() == ""  # created, nothing recorded
    missing_dir = tmp_path / "nowhere" / "known"
    with pytest.raises(SSHError) as unusable:
        client(guest, options(keys, str(missing_dir)), Recorder()).run("true")
    assert str(unusable.value) == (
        f'failed creating known hosts file "{missing_dir}": open {missing_dir}: no such file or directory'
    )


def test_a_passphrase_protected_identity_asks_for_its_passphrase(
    guest: GuestServer, keys: Keys, tmp_path: Path
) -> None:
    protected = tmp_path / "protected"
    guest.authorized.add(ed25519_key_file(protected, b"pass phrase").asbytes())
    recorder = Recorder(secrets=["pass phrase"])
    client(guest, options(keys, identity_file=str(protected)), recorder).run("true")
    assert recorder.prompts == [f"Key {protected} requires a password: "]
    with pytest.raises(SSHError) as wrong:
        client(guest, options(keys, identity_file=str(protected)), Recorder(secrets=["nope"])).run("true")
    assert str(wrong.value) == "ssh: handshake failed: x509: decryption password incorrect"


def test_the_password_is_asked_for_when_the_keys_do_not_do(
    guest: GuestServer, keys: Keys, tmp_path: Path
) -> None:
    stranger = tmp_path / "stranger"
    ed25519_key_file(stranger)
    recorder = Recorder(secrets=[PASSWORD])
    client(guest, options(keys, identity_file=str(stranger)), recorder).run("true")
    assert recorder.prompts == [f"{USER}@vmi/testvmi.ns's password: "]

    with pytest.raises(SSHError) as refused:
        client(guest, options(keys, identity_file=str(stranger)), Recorder(secrets=["wrong"])).run("true")
    assert str(refused.value) == (
        "ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey password], "
        "no supported methods remain"
    )


def test_only_a_named_identity_file_must_exist(guest: GuestServer, keys: Keys, tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(SSHError) as refused:
        client(guest, options(keys, identity_file=str(missing)), Recorder()).run("true")
    assert str(refused.value) == f"ssh: handshake failed: open {missing}: no such file or directory"
    # At the default location its absence only skips the key.
    recorder = Recorder(secrets=[PASSWORD])
    client(guest, options(keys, identity_file=str(missing), identity_file_provided=False), recorder).run(
        "true"
    )
    assert recorder.prompts == [f"{USER}@vmi/testvmi.ns's password: "]


def test_an_interactive_shell_runs_on_a_pty_and_its_exit_status_is_not_an_error(
    guest: GuestServer, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller, terminal = pty.openpty()
    try:
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        monkeypatch.setenv("TERM", "xterm-test")
        before = termios.tcgetattr(terminal)
        os.write(controller, b"exit\n")
        recorder = Recorder()
        console = recorder.console()
        console.read_stdin = lambda: os.read(terminal, 1024)
        console.stdin_fd = terminal
        NativeSSH(options(keys), TARGET, lambda: FakeStream(guest.port), console).run("")
        assert b"pty xterm-test 100x30" in recorder.out
        assert guest.ptys == [("xterm-test", 100, 30)]
        assert termios.tcgetattr(terminal) == before
    finally:
        os.close(controller)
        os.close(terminal)


def test_a_shell_needs_a_terminal(guest: GuestServer, keys: Keys) -> None:
    read_end, write_end = os.pipe()
    try:
        console = Recorder().console()
        console.stdin_fd = read_end
        with pytest.raises(SSHError) as refused:
            NativeSSH(options(keys), TARGET, lambda: FakeStream(guest.port), console).run("")
        assert str(refused.value) == "inappropriate ioctl for device"
    finally:
        os.close(read_end)
        os.close(write_end)


# -- scp -------------------------------------------------------------------------------------------------


def scp_runner(
    guest: GuestServer, keys: Keys, *, recursive: bool = False, preserve: bool = False
) -> Callable[[Transfer], None]:
    def run(transfer: Transfer) -> None:
        native_scp(
            options(keys),
            transfer,
            lambda: FakeStream(guest.port),
            recursive=recursive,
            preserve=preserve,
            console=Recorder().console(),
        )

    return run


def to_guest(local: Path | str, remote: str) -> Transfer:
    return Transfer(str(local), TARGET, remote, True)


def from_guest(remote: str, local: Path | str) -> Transfer:
    return Transfer(str(local), TARGET, remote, False)


@needs_scp
def test_scp_copies_a_file_to_the_guest(guest: GuestServer, keys: Keys, home: Path, tmp_path: Path) -> None:
    local = tmp_path / "data.bin"
    local.write_bytes(os.urandom(200_000))
    local.chmod(0o600)
    scp_runner(guest, keys)(to_guest(local, "copy.bin"))
    assert (home / "copy.bin").read_bytes() == local.read_bytes()
    assert stat.S_IMODE((home / "copy.bin").stat().st_mode) == 0o644 & ~_umask()  # the default mode
    assert guest.commands == ["scp -q -t 'copy.bin'"]
    scp_runner(guest, keys)(to_guest(local, "."))  # a directory target keeps the file's name
    assert (home / "data.bin").read_bytes() == local.read_bytes()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@needs_scp
def test_scp_preserve_keeps_mode_and_times(
    guest: GuestServer, keys: Keys, home: Path, tmp_path: Path
) -> None:
    local = tmp_path / "script.sh"
    local.write_text("#!/bin/sh\n")
    local.chmod(0o750)
    os.utime(local, (1_600_000_000, 1_500_000_000))
    scp_runner(guest, keys, preserve=True)(to_guest(local, "script.sh"))
    copied = (home / "script.sh").stat()
    assert (stat.S_IMODE(copied.st_mode), int(copied.st_mtime)) == (0o750, 1_500_000_000)

    back = tmp_path / "back.sh"
    scp_runner(guest, keys, preserve=True)(from_guest("script.sh", back))
    assert guest.commands[-1] == "scp -q -f -p 'script.sh'"
    assert (int(back.stat().st_mtime), int(back.stat().st_atime)) == (1_500_000_000, 1_600_000_000)


def make_tree(root: Path) -> None:
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "top.txt").write_text("top")
    (root / "sub" / "mid.txt").write_text("mid")
    (root / "sub" / "deeper" / "low.txt").write_text("low")


def tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text() for path in sorted(root.rglob("*")) if path.is_file()
    }


@needs_scp
def test_scp_copies_directories_both_ways(guest: GuestServer, keys: Keys, home: Path, tmp_path: Path) -> None:
    local = tmp_path / "mydir"
    make_tree(local)
    scp_runner(guest, keys, recursive=True)(to_guest(f"{local}/", "./mydir"))
    assert guest.commands == ["scp -q -t -r './mydir'"]
    assert tree(home / "mydir") == tree(local)

    # Into a new local directory: it becomes the copy ...
    fresh = tmp_path / "fresh"
    scp_runner(guest, keys, recursive=True)(from_guest("mydir", fresh))
    assert guest.commands[-1] == "scp -q -f -r 'mydir'"
    assert tree(fresh) == tree(local)
    # ... into an existing one: the copy goes below it, under the remote name.
    existing = tmp_path / "existing"
    existing.mkdir()
    scp_runner(guest, keys, recursive=True)(from_guest("mydir", existing))
    assert tree(existing / "mydir") == tree(local)


@needs_scp
def test_scp_copies_a_file_from_the_guest(guest: GuestServer, keys: Keys, home: Path, tmp_path: Path) -> None:
    (home / "remote.txt").write_text("from the guest")
    target = tmp_path / "local.txt"
    scp_runner(guest, keys)(from_guest("remote.txt", target))
    assert target.read_text() == "from the guest"
    scp_runner(guest, keys)(from_guest("remote.txt", tmp_path))  # a directory: the remote name below it
    assert (tmp_path / "remote.txt").read_text() == "from the guest"


@needs_scp
def test_scp_refusals(guest: GuestServer, keys: Keys, home: Path, tmp_path: Path) -> None:
    def refusal(transfer: Transfer, *, recursive: bool = False) -> str:
        with pytest.raises(SSHError) as refused:
            scp_runner(guest, keys, recursive=recursive)(transfer)
        return str(refused.value)

    missing = tmp_path / "missing"
    assert refusal(to_guest(missing, "x")) == f'local path "{missing}" does not exist, can\'t copy it'
    assert refusal(to_guest(tmp_path, "x")) == (
        f"local path \"{tmp_path}\" is a directory but '--recursive' was not provided"
    )
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert refusal(to_guest(afile, "x"), recursive=True) == (
        f"local path \"{afile}\" is not a directory but '--recursive' was provided"
    )
    assert refusal(from_guest("x", afile), recursive=True) == (
        f"local path \"{afile}\" is a file but '--recursive' was provided"
    )
    assert (
        refusal(from_guest("nothere.txt", tmp_path / "out")) == "scp: nothere.txt: No such file or directory"
    )
    assert refusal(from_guest("x", tmp_path / "no" / "dir" / "out")) == (
        f"scp: stat {tmp_path / 'no' / 'dir'}: no such file or directory"
    )
    assert not (tmp_path / "out").exists()


def test_scp_without_scp_on_the_guest(keys: Keys, home: Path, tmp_path: Path) -> None:
    guest = GuestServer(home, keys.host, [keys.client], path="/nonexistent")
    try:
        afile = tmp_path / "afile"
        afile.write_text("x")
        with pytest.raises(SSHError) as refused:
            scp_runner(guest, keys)(to_guest(afile, "x"))
        assert (
            str(refused.value) == "scp: unexpected remote scp server failure: Process exited with status 127"
        )
    finally:
        guest.close()


# -- the commands, end to end through a websocket ---------------------------------------------------------


def virtctl(kubeconfig: Path, *args: str, stdin: str = "") -> Any:
    return CliRunner().invoke(root, ["--kubeconfig", str(kubeconfig), *args], input=stdin)


def test_built_in_ssh_through_virt_api_s_port_forward(
    virt_api: FakeVirtApi, api_kubeconfig: Path, keys: Keys
) -> None:
    result = virtctl(
        api_kubeconfig,
        "ssh",
        "--local-ssh=false",
        "--known-hosts=",
        "-i",
        str(keys.client_file),
        "-c",
        "cat; echo done",
        f"{USER}@vmi/testvmi",
        stdin="typed\n",
    )
    assert (result.exit_code, result.stdout) == (0, f"{SKIPPING_HOST_KEY_CHECK}\ntyped\ndone\n")
    assert result.stderr.startswith("The --local-ssh flag is deprecated and now defaults to true.\n")
    assert virt_api.paths == [
        "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/testvmi/portforward/22/tcp"
    ]
    failed = virtctl(
        api_kubeconfig, "ssh", "--local-ssh=false", "--known-hosts=", "-i", str(keys.client_file),
        "-c", "exit 7", f"{USER}@vm/testvm/other",
    )  # fmt: skip
    assert failed.exit_code == 1
    assert failed.stderr.endswith("Process exited with status 7\n")
    assert virt_api.paths[-1].endswith("/namespaces/other/virtualmachines/testvm/portforward/22/tcp")


@needs_scp
def test_built_in_scp_through_virt_api_s_port_forward(
    virt_api: FakeVirtApi, api_kubeconfig: Path, keys: Keys, home: Path, tmp_path: Path
) -> None:
    local = tmp_path / "up.txt"
    local.write_text("up")
    common = ["--local-ssh=false", "--known-hosts=", "-i", str(keys.client_file)]
    result = virtctl(api_kubeconfig, "scp", *common, str(local), f"{USER}@vmi/testvmi:copied.txt")
    assert (result.exit_code, result.stderr) == (0, "")  # scp has no deprecation notice
    assert (home / "copied.txt").read_text() == "up"
    down = tmp_path / "down.txt"
    result = virtctl(api_kubeconfig, "scp", *common, f"{USER}@vmi/testvmi.ns:copied.txt", str(down))
    assert result.exit_code == 0
    assert down.read_text() == "up"


def test_a_refused_stream_names_the_target(api_kubeconfig: Path, keys: Keys, tmp_path: Path) -> None:
    broken = tmp_path / "broken-kubeconfig"
    broken.write_text(api_kubeconfig.read_text().replace("/127.0.0.1:", "/127.0.0.1:1#"))
    result = virtctl(broken, "ssh", "--local-ssh=false", "--known-hosts=", "-c", "true", "vmi/testvmi")
    assert result.exit_code == 1
    assert result.stderr.startswith("The --local-ssh flag")
    assert result.stderr.splitlines()[-1].startswith("can't access VMI testvmi: Can't connect to websocket")


LOCAL_CLIENT_OPTIONS = [
    *("-t", "-oStrictHostKeyChecking=no", "-t", "-oUserKnownHostsFile=/dev/null"),
    *("-t", "-oGlobalKnownHostsFile=/dev/null", "-t", "-oBatchMode=yes", "-t", "-oLogLevel=ERROR"),
]


@pytest.fixture
def local_virtctl(api_kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ProxyCommand runs this checkout's virtctl, which finds the cluster through $KUBECONFIG (the
    ProxyCommand names no kubeconfig, as KubeVirt's does not)."""
    executable = Path(sys.executable).parent / "virtctl"
    if not executable.exists():
        pytest.skip("the virtctl console script is not installed")
    monkeypatch.setattr(wrapped, "program", lambda: str(executable))
    monkeypatch.setenv("KUBECONFIG", str(api_kubeconfig))


@needs_ssh
@pytest.mark.usefixtures("local_virtctl")
def test_the_local_ssh_reaches_the_guest_through_port_forward_stdio(
    virt_api: FakeVirtApi, api_kubeconfig: Path, keys: Keys, capfd: pytest.CaptureFixture[str]
) -> None:
    result = virtctl(
        api_kubeconfig, "ssh", *LOCAL_CLIENT_OPTIONS, "-t", "-n", "-i", str(keys.client_file),
        "-c", "echo hello from the guest", f"{USER}@vmi/testvmi",
    )  # fmt: skip
    output = capfd.readouterr()
    assert result.exit_code == 0, output.err
    assert output.out == "hello from the guest\n"
    assert virt_api.paths == [
        "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/testvmi/portforward/22/tcp"
    ]


@needs_scp
@pytest.mark.usefixtures("local_virtctl")
def test_the_local_scp_reaches_the_guest_through_port_forward_stdio(
    virt_api: FakeVirtApi, api_kubeconfig: Path, keys: Keys, home: Path, tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    local = tmp_path / "local.txt"
    local.write_text("through the proxy")
    # -O: the classic protocol (the test guest has scp but no SFTP server).
    result = virtctl(
        api_kubeconfig, "scp", *LOCAL_CLIENT_OPTIONS, "-t", "-O", "-i", str(keys.client_file),
        str(local), f"{USER}@vmi/testvmi:remote.txt",
    )  # fmt: skip
    assert result.exit_code == 0, capfd.readouterr().err
    assert (home / "remote.txt").read_text() == "through the proxy"
