"""virtctl console, vnc and port-forward against a local websocket server playing virt-api: the URL,
subprotocol and credentials sent, client-go's wording of refusals, the console's retry while the VMI is
not ready, its escape byte and disconnection, the VNC proxy's port announcement and relay, and
port-forward's parsing and one stream per connection."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import socket
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import WSMsgType, web
from click.testing import CliRunner

from kubevirt.client import KubeClient
from kubevirt.virtctl import console as console_module
from kubevirt.virtctl.console import TIMED_OUT, attach, connect_console, raw_terminal
from kubevirt.virtctl.portforward import (
    ForwardedPort,
    Forwarder,
    PortForwardError,
    Target,
    parse_port,
    parse_target,
)
from kubevirt.virtctl.root import root
from kubevirt.virtctl.streams import StreamEndedError, StreamError, open_stream, refusal, stream_url
from kubevirt.virtctl.vnc import VNCError, run_vnc, start_viewer_for, viewer_command

pytestmark = pytest.mark.timeout(60)

TOKEN = "secret-token"
VMI_PATH = "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/{name}/{stream}"


class FakeVirtApi:
    """Answers the console and VNC streams on loopback (plain HTTP), in a thread of its own."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.not_ready = 0  # how many console requests get 400 before one is upgraded
        self.open_streams = 0
        self._loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_get(VMI_PATH.format(name="{name}", stream="{stream}"), self._handle)
        app.router.add_get(
            "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/{resource}/{name}/portforward/{port}/{proto}",
            self._handle,
        )
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = int(self._runner.addresses[0][1])
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        self.requests.append(
            {
                "path": request.path_qs,
                "protocol": request.headers.get("Sec-WebSocket-Protocol"),
                "authorization": request.headers.get("Authorization"),
            }
        )
        if name == "starting" and self.not_ready > 0:
            self.not_ready -= 1
            return web.json_response(_status(400, "VMI is not running"), status=400)
        if name == "missing":
            message = 'virtualmachineinstance.kubevirt.io "missing" not found'
            return web.json_response(_status(404, message), status=404)
        if name == "broken":
            return web.Response(status=500, text="handler unreachable")
        ws = web.WebSocketResponse(protocols=("plain.kubevirt.io",))
        await ws.prepare(request)
        await ws.send_bytes(b"hello\n")
        if name == "drop":
            assert request.transport is not None
            request.transport.abort()  # gone without a close frame
            return ws
        self.open_streams += 1
        try:
            async for message in ws:
                if message.type == WSMsgType.BINARY:
                    await ws.send_bytes(message.data)
        finally:
            self.open_streams -= 1
        return ws

    def wait_until_closed(self, timeout: float = 10.0) -> None:
        """Until every echoing stream has been closed by its client."""
        deadline = time.monotonic() + timeout
        while self.open_streams and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.open_streams == 0

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def _status(code: int, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code}


@pytest.fixture
def virt_api() -> Iterator[FakeVirtApi]:
    server = FakeVirtApi()
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(tmp_path: Path, virt_api: FakeVirtApi) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{virt_api.port}"}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ns"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def client(kubeconfig: Path) -> KubeClient:
    return KubeClient.from_kubeconfig(str(kubeconfig))


class Typing:
    """Input that is handed out one chunk at a time, each when the test releases it."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._ready = threading.Semaphore(0)

    def type(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._ready.release()

    def read(self) -> bytes:
        self._ready.acquire()
        return self._chunks.pop(0)


def test_the_stream_url_is_client_go_s() -> None:
    assert stream_url("https://api.example:6443/prefix/", "ns", "vm", "vnc", {"preserveSession": "true"}) == (
        "wss://api.example:6443/prefix/apis/subresources.kubevirt.io/v1/namespaces/ns/"
        "virtualmachineinstances/vm/vnc?preserveSession=true"
    )
    with pytest.raises(StreamError, match="Unsupported Protocol ftp"):
        stream_url("ftp://x", "ns", "vm", "console", {})


def test_refusals_are_worded_as_client_go_words_them() -> None:
    status = json.dumps(_status(409, "VMI is paused")).encode()
    assert str(refusal(409, {"Content-Type": "application/json"}, status)) == "VMI is paused"
    assert str(refusal(500, {"content-type": "text/plain; charset=utf-8"}, b"boom")) == (
        "Can't connect to websocket (500): websocket: bad handshake: application info: boom"
    )
    assert str(refusal(502, None, None)) == "Can't connect to websocket (502): websocket: bad handshake"


def test_the_console_retries_while_the_vmi_is_not_ready(virt_api: FakeVirtApi, client: KubeClient) -> None:
    virt_api.not_ready = 2
    naps: list[float] = []
    ws = connect_console(client, "ns", "starting", 60, sleep=naps.append)
    ws.close()
    assert naps == [1.0, 1.0]
    assert virt_api.requests[-1] == {
        "path": VMI_PATH.format(name="starting", stream="console"),
        "protocol": "plain.kubevirt.io",
        "authorization": f"Bearer {TOKEN}",
    }
    virt_api.not_ready = 100
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(StreamError, match=TIMED_OUT):
        connect_console(client, "ns", "starting", 3, sleep=sleep, clock=lambda: now[0])
    assert now == [3.0]
    with pytest.raises(StreamError, match='"missing" not found') as missing:
        connect_console(client, "ns", "missing", 60, sleep=naps.append)
    assert missing.value.status == 404
    assert naps == [1.0, 1.0]  # no retry for anything but 400


def test_the_console_relays_until_the_escape_byte(virt_api: FakeVirtApi, client: KubeClient) -> None:
    ws = connect_console(client, "ns", "echo", 10)
    output = bytearray()
    typing = Typing()
    session = threading.Thread(target=attach, args=(ws, typing.read, output.extend))
    session.start()
    typing.type(b"uname\n")
    deadline = threading.Event()
    while b"uname\n" not in output and not deadline.wait(0.05):
        pass
    typing.type(bytes([29]) + b"ignored")
    session.join(10)
    assert not session.is_alive()
    assert bytes(output) == b"hello\nuname\n"


def test_a_dropped_console_is_an_abnormal_end(virt_api: FakeVirtApi, client: KubeClient) -> None:
    ws = connect_console(client, "ns", "drop", 10)
    output = bytearray()
    with pytest.raises(StreamEndedError) as ended:
        attach(ws, Typing().read, output.extend)
    assert ended.value.abnormal
    assert bytes(output) == b"hello\n"


def test_the_console_command_prints_the_refusal(kubeconfig: Path, virt_api: FakeVirtApi) -> None:
    result = CliRunner().invoke(root, ["--kubeconfig", str(kubeconfig), "console", "broken"])
    assert result.exit_code == 1
    assert result.stderr == (
        "Can't connect to websocket (500): websocket: bad handshake: application info: handler unreachable\n"
    )
    assert console_module.CONNECTED.format(vmi="vm") == (
        "Successfully connected to vm console. Press Ctrl+] or Ctrl+5 to exit console.\n"
    )


def test_vnc_proxy_only_announces_its_port_and_relays_one_viewer(client: KubeClient) -> None:
    ws = open_stream(client, "ns", "echo", "vnc", {"preserveSession": "true"})
    ws.settimeout(None)
    listener = socket.create_server(("127.0.0.1", 0))
    announced: list[str] = []
    proxy = threading.Thread(
        target=run_vnc,
        args=(ws, listener),
        kwargs={"proxy_only": True, "announce": announced.append, "start_viewer": lambda _port: None},
    )
    proxy.start()
    while not announced:
        threading.Event().wait(0.02)
    port = json.loads(announced[0])["port"]
    assert announced[0] == f'{{"port":{port}}}'
    with socket.create_connection(("127.0.0.1", port), timeout=10) as viewer:
        assert viewer.recv(6) == b"hello\n"
        viewer.sendall(b"RFB 003.008\n")
        received = b""
        while len(received) < 12:
            received += viewer.recv(12)
        assert received == b"RFB 003.008\n"
    proxy.join(10)
    assert not proxy.is_alive()


def test_vnc_without_a_viewer_fails_at_once(client: KubeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    ws = open_stream(client, "ns", "echo", "vnc")
    listener = socket.create_server(("127.0.0.1", 0))
    started = time.monotonic()
    with pytest.raises(VNCError) as failed:
        run_vnc(
            ws,
            listener,
            proxy_only=False,
            announce=lambda _line: None,
            start_viewer=start_viewer_for(None, None),
        )
    assert str(failed.value) == (
        "error encountered: could not find remote-viewer or vncviewer binary in $PATH"
    )
    assert time.monotonic() - started < 5  # not the 60 s a viewer has to connect


def test_vnc_viewer_choice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(VNCError, match=r"could not find remote-viewer or vncviewer binary in \$PATH"):
        viewer_command(5900, None, None)
    viewer = tmp_path / "vncviewer"
    viewer.write_text("#!/bin/sh\n")
    viewer.chmod(0o755)
    assert viewer_command(5901, None, None) == ["vncviewer", "127.0.0.1:5901"]
    assert viewer_command(5902, "remote-viewer", str(viewer)) == [str(viewer), "vnc://127.0.0.1:5902"]
    with pytest.raises(VNCError, match="unsupported vnc-type for linux: chicken"):
        viewer_command(5903, "chicken", str(viewer))


def test_vnc_type_and_path_go_together(kubeconfig: Path) -> None:
    result = CliRunner().invoke(root, ["--kubeconfig", str(kubeconfig), "vnc", "vm", "--vnc-type", "tiger"])
    assert result.exit_code == 2
    assert "[vnc-type vnc-path]" in result.stderr


# -- port-forward ---------------------------------------------------------------------------------


def test_port_forward_targets_and_ports_parse_as_kubevirt_s() -> None:
    assert parse_target("vmi/testvmi") == Target("vmi", "testvmi", "")
    assert parse_target("VirtualMachines/vm/other") == Target("vm", "vm", "other")
    assert parse_target("vm/vm.legacy-ns") == Target("vm", "vm", "legacy-ns")
    for bad, message in (
        ("", "target cannot be empty"),
        ("vmi", "target must contain type and name separated by '/'"),
        ("vmi/a/b/c", "target is not valid with more than two '/'"),
        ("vmi/a/", "namespace cannot be empty"),
        ("pod/a", "unsupported resource type 'pod'"),
        ("vmi/", "name cannot be empty"),
    ):
        with pytest.raises(PortForwardError) as refused:
            parse_target(bad)
        assert str(refused.value) == message
    assert parse_port("8080") == ForwardedPort("tcp", 8080, 8080)
    assert parse_port("udp/8080:9090") == ForwardedPort("udp", 8080, 9090)
    assert parse_port("8080:22").subresource == "portforward/22/tcp"
    with pytest.raises(PortForwardError, match="missing local and/or remote port"):
        parse_port("tcp/")


def test_port_forward_relays_each_connection_through_its_own_stream(
    virt_api: FakeVirtApi, client: KubeClient
) -> None:
    forwarder = Forwarder(client, Target("vm", "echo", "ns"))
    port = ForwardedPort("tcp", 0, 22)
    listener = forwarder.listen("127.0.0.1", port)
    local = listener.getsockname()[1]
    threading.Thread(target=forwarder.serve, args=(listener, port), daemon=True).start()
    for _ in range(2):
        with socket.create_connection(("127.0.0.1", local), timeout=10) as connection:
            assert connection.recv(6) == b"hello\n"
            connection.sendall(b"SSH-2.0-test\r\n")
            received = b""
            while not received.endswith(b"\r\n"):
                received += connection.recv(64)
            assert received == b"SSH-2.0-test\r\n"
    listener.close()
    virt_api.wait_until_closed()  # each viewer's leaving closed its stream
    paths = [r["path"] for r in virt_api.requests]
    assert (
        paths
        == ["/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/echo/portforward/22/tcp"] * 2
    )
    with pytest.raises(PortForwardError, match="unknown protocol: udp"):
        forwarder.listen("127.0.0.1", ForwardedPort("udp", 0, 53))


def test_port_forward_command_refusals(kubeconfig: Path) -> None:
    def run(*args: str) -> Any:
        return CliRunner().invoke(root, ["--kubeconfig", str(kubeconfig), "port-forward", *args])

    stdio = run("vmi/vm", "22", "23", "--stdio")
    assert (stdio.exit_code, stdio.stderr) == (1, "only one port supported when forwarding to stdout\n")
    bad = run("pod/x", "22")
    assert (bad.exit_code, bad.stderr) == (1, "unsupported resource type 'pod'\n")


def test_the_terminal_is_raw_during_the_session_and_restored_after() -> None:
    controller, terminal = pty.openpty()
    try:
        before = termios.tcgetattr(terminal)
        assert before[3] & termios.ECHO
        with raw_terminal(terminal):
            during = termios.tcgetattr(terminal)
            assert not during[3] & (termios.ECHO | termios.ICANON)
        assert termios.tcgetattr(terminal) == before
    finally:
        os.close(controller)
        os.close(terminal)
    read_end, write_end = os.pipe()  # not a terminal: left as it is
    with raw_terminal(read_end):
        pass
    os.close(read_end)
    os.close(write_end)
