"""virt-handler's console server on loopback with real mutual TLS: routing to a fake launcher, streams to
real unix sockets in a pod directory, refusal of clients without virt-handler's client certificate, and
sockets that are not plain sockets inside the pod."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import urllib3

from kubevirt.client import CONFIG_MAPS
from kubevirt.handler_launcher_com.cmd.client import CommandFailedError
from kubevirt.service.tls import ReloadingCertificate
from kubevirt.virt_handler.private_sockets import UnsafeSocketError, connect_private_socket, private_dir
from kubevirt.virt_handler.rest.lifecycle import LauncherLocator
from kubevirt.virt_handler.rest.peer import CLIENT_COMMON_NAME, PeerRefusedError, check_client_certificate
from kubevirt.virt_handler.rest.server import ClientCAFollower, ConsoleServer, ServerThread
from kubevirt_testing.certificates import CertificateAuthority, KeyPair, write_pair
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.unix_echo import EchoServer, bind_unix

pytestmark = pytest.mark.timeout(60)

JSON = dict[str, Any]
NODE = "node01"
POD_UID = "pod-1"
VMI_UID = "0b7c4a3e-1111-4222-8333-944445555666"
BASE = "/v1/namespaces/default/virtualmachineinstances"


@dataclass
class FakeLauncher:
    calls: list[tuple[str, Any]] = field(default_factory=list)
    fail: str | None = None
    domain: JSON | None = None

    def vmi_command(self, command: str, vmi: JSON) -> None:
        self.calls.append((command, vmi["metadata"]["name"]))
        if self.fail:
            raise CommandFailedError(command, self.fail)

    def freeze_vmi(self, vmi: JSON, unfreeze_timeout_seconds: int) -> None:
        self.calls.append(("FreezeVirtualMachine", unfreeze_timeout_seconds))
        if self.fail:
            raise CommandFailedError("FreezeVirtualMachine", self.fail)

    def get_guest_info(self) -> JSON:
        return {"hostname": "guest"}

    def get_users(self) -> list[Any]:
        return [{"userName": "root"}]

    def get_filesystems(self) -> list[Any]:
        return []

    def get_domain(self) -> JSON | None:
        if self.fail:
            raise CommandFailedError("GetDomain", self.fail)
        return self.domain

    def close(self) -> None:
        pass


@dataclass
class Events:
    seen: list[tuple[str, str, str]] = field(default_factory=list)

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.seen.append((event_type, reason, message))


@dataclass
class Store:
    items: dict[str, JSON] = field(default_factory=dict)

    def get_by_key(self, key: str) -> JSON | None:
        return self.items.get(key)


@dataclass
class Pki:
    ca: CertificateAuthority
    directory: Path

    def write(self, name: str, pair: KeyPair) -> tuple[str, str]:
        cert, key = write_pair(pair, self.directory, name)
        return str(cert), str(key)

    def client_context(self, pair: KeyPair | None) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ca.pair.cert_pem.decode())
        context.check_hostname = False
        if pair is not None:
            context.load_cert_chain(*self.write(f"client-{id(pair)}", pair))
        return context


@dataclass
class Harness:
    port: int
    pki: Pki
    launcher: FakeLauncher
    events: Events
    pods_dir: Path
    client: KeyPair

    def url(self, path: str, scheme: str = "https") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{BASE}/{path}"

    def call(
        self, method: str, path: str, body: bytes | None = None, pair: KeyPair | None = None
    ) -> urllib3.BaseHTTPResponse:
        pool = urllib3.PoolManager(ssl_context=self.pki.client_context(pair or self.client), retries=False)
        return pool.request(method, self.url(path), body=body, timeout=10)


def vmi(name: str = "testvmi") -> JSON:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": VMI_UID},
        "status": {"phase": "Running", "activePods": {POD_UID: NODE}, "nodeName": NODE},
    }


@pytest.fixture
def pods_dir(tmp_path: Path) -> Iterator[Path]:
    pods = tmp_path / "pods"
    empty_dirs = pods / POD_UID / "volumes" / "kubernetes.io~empty-dir"
    (empty_dirs / "sockets").mkdir(parents=True)
    private = pods.joinpath(*private_dir(POD_UID, VMI_UID))
    private.mkdir(parents=True)
    servers = [
        EchoServer(empty_dirs / "sockets" / "launcher-sock", b""),
        EchoServer(private / "virt-serial0", b"login: "),
        EchoServer(private / "virt-vnc", b"RFB 003.008\n"),
    ]
    yield pods
    for server in servers:
        server.close()


@pytest.fixture
def harness(tmp_path: Path, pods_dir: Path) -> Iterator[Harness]:
    pki = Pki(CertificateAuthority.create(), tmp_path)
    cert, key = pki.write("server", pki.ca.issue("kubevirt.io:system:node:virt-handler"))
    certificate = ReloadingCertificate(Path(cert), Path(key), require_client_cert=True)
    certificate.trust_client_ca(pki.ca.pair.cert_pem.decode())
    launcher = FakeLauncher()
    events = Events()
    store = Store({"default/testvmi": vmi()})
    locator = LauncherLocator(pods_dir, NODE, connect=lambda _path: launcher)
    thread = ServerThread(ConsoleServer(store, locator, events), certificate, "127.0.0.1", 0)
    port = thread.start()
    client = pki.ca.issue(CLIENT_COMMON_NAME, client=True)
    try:
        yield Harness(port, pki, launcher, events, pods_dir, client)
    finally:
        thread.stop()


# -- lifecycle routes ---------------------------------------------------------------------------


def test_pause_unpause_soft_reboot_and_reset_reach_the_launcher(harness: Harness) -> None:
    for operation in ("pause", "unpause", "softreboot", "reset", "unfreeze"):
        response = harness.call("PUT", f"testvmi/{operation}")
        assert (response.status, response.data) == (202, b"")
    assert [command for command, _ in harness.launcher.calls] == [
        "PauseVirtualMachine",
        "UnpauseVirtualMachine",
        "SoftRebootVirtualMachine",
        "ResetVirtualMachine",
        "UnfreezeVirtualMachine",
    ]
    assert harness.events.seen == [
        ("Normal", "SoftRebooted", "VirtualMachineInstance soft rebooted"),
        ("Normal", "Reset", "VirtualMachineInstance reset"),
    ]


def test_an_unknown_vmi_is_404_and_a_launcher_failure_500_or_400(harness: Harness) -> None:
    missing = harness.call("PUT", "other/pause")
    assert (missing.status, missing.data) == (404, b"VMI default/other does not exist")
    harness.launcher.fail = "Domain not found."
    failed = harness.call("PUT", "testvmi/pause")
    assert failed.status == 500
    assert failed.data == b'server error. command Pause failed: "Domain not found."'
    assert harness.call("PUT", "testvmi/unfreeze").status == 400


def test_freeze_needs_its_unfreeze_timeout(harness: Harness) -> None:
    unset = harness.call("PUT", "testvmi/freeze", b"")
    assert (unset.status, unset.data) == (400, b"Unfreeze timeout in freeze request is not set")
    garbled = harness.call("PUT", "testvmi/freeze", b"{not json")
    assert (garbled.status, garbled.data) == (400, b"failed to unmarshal unfreeze timeout")
    frozen = harness.call("PUT", "testvmi/freeze", b'{"unfreezeTimeout": "5m0s"}')
    assert frozen.status == 202
    assert harness.launcher.calls == [("FreezeVirtualMachine", 300)]
    harness.launcher.fail = "the guest agent is not connected"
    refused = harness.call("PUT", "testvmi/freeze", b'{"unfreezeTimeout": "30s"}')
    assert refused.status == 400
    assert harness.events.seen[-1][:2] == ("Warning", "FreezeError")


def test_guest_agent_reads_answer_json(harness: Harness) -> None:
    info = harness.call("GET", "testvmi/guestosinfo")
    assert (info.status, json.loads(info.data)) == (200, {"hostname": "guest"})
    users = harness.call("GET", "testvmi/userlist")
    assert json.loads(users.data) == {"metadata": {}, "items": [{"userName": "root"}]}
    filesystems = harness.call("GET", "testvmi/filesystemlist")
    assert json.loads(filesystems.data) == {"metadata": {}, "items": []}


def test_launcher_state_reports_socket_and_domain_read_only(harness: Harness) -> None:
    harness.launcher.domain = {"Status": {"Status": "Paused", "Reason": "User"}}
    answer = harness.call("GET", "testvmi/launcherstate")
    assert (answer.status, json.loads(answer.data)) == (
        200,
        {
            "socket": {"state": "Ready", "message": ""},
            "domain": {"exists": True, "status": "Paused", "reason": "User"},
            "lastDomainEvent": None,
        },
    )
    assert harness.launcher.calls == []  # nothing but GetDomain was sent
    harness.launcher.fail = "connection reset by peer"
    failed = json.loads(harness.call("GET", "testvmi/launcherstate").data)
    assert failed["socket"]["state"] == "Unreachable"
    assert "connection reset by peer" in failed["socket"]["message"]
    assert harness.call("GET", "other/launcherstate").status == 404


# -- who may call -------------------------------------------------------------------------------


def test_clients_without_the_kubevirt_ca_s_client_certificate_are_refused(harness: Harness) -> None:
    for context in (
        harness.pki.client_context(None),  # no certificate at all
        Pki(harness.pki.ca, harness.pki.directory).client_context(
            CertificateAuthority.create("other").issue(CLIENT_COMMON_NAME, client=True)
        ),
    ):
        pool = urllib3.PoolManager(ssl_context=context, retries=False)
        with pytest.raises(urllib3.exceptions.HTTPError):
            pool.request("PUT", harness.url("testvmi/pause"), timeout=5)
    wrong_name = harness.call("PUT", "testvmi/pause", pair=harness.pki.ca.issue("someone", client=True))
    assert wrong_name.status == 401
    assert wrong_name.data == (
        f"common name is invalid, expected {CLIENT_COMMON_NAME}, but got someone".encode()
    )
    # A serving certificate is no client certificate: OpenSSL already refuses it in the handshake.
    with pytest.raises(urllib3.exceptions.HTTPError):
        harness.call("PUT", "testvmi/pause", pair=harness.pki.ca.issue(CLIENT_COMMON_NAME))
    assert harness.launcher.calls == []


def test_the_peer_check_wants_client_usage_and_virt_handler_s_client_name() -> None:
    ca = CertificateAuthority.create()
    check_client_certificate(ca.issue(CLIENT_COMMON_NAME, client=True).cert_der)
    check_client_certificate(ca.issue("cluster-pki-name", client=True).cert_der, externally_managed=True)
    with pytest.raises(PeerRefusedError, match="incompatible key usage"):
        check_client_certificate(ca.issue(CLIENT_COMMON_NAME).cert_der)
    with pytest.raises(PeerRefusedError, match="no client certificate provided"):
        check_client_certificate(None)


def test_nobody_is_served_before_a_ca_is_known(tmp_path: Path, pods_dir: Path) -> None:
    pki = Pki(CertificateAuthority.create(), tmp_path)
    cert, key = pki.write("server", pki.ca.issue("kubevirt.io:system:node:virt-handler"))
    certificate = ReloadingCertificate(Path(cert), Path(key), require_client_cert=True)
    locator = LauncherLocator(pods_dir, NODE, connect=lambda _path: FakeLauncher())
    thread = ServerThread(ConsoleServer(Store(), locator, Events()), certificate, "127.0.0.1", 0)
    port = thread.start()
    try:
        context = pki.client_context(pki.ca.issue(CLIENT_COMMON_NAME, client=True))
        pool = urllib3.PoolManager(ssl_context=context, retries=False)
        with pytest.raises(urllib3.exceptions.HTTPError):
            pool.request("PUT", f"https://127.0.0.1:{port}{BASE}/testvmi/pause", timeout=5)
    finally:
        thread.stop()


# -- streams ------------------------------------------------------------------------------------


async def _open(harness: Harness, session: aiohttp.ClientSession, path: str) -> Any:
    return await session.ws_connect(
        harness.url(path, "wss"),
        protocols=("plain.kubevirt.io",),
        ssl=harness.pki.client_context(harness.client),
    )


async def _receive(ws: Any, expected: bytes) -> bytes:
    received = b""
    while not received.endswith(expected):
        message = await asyncio.wait_for(ws.receive(), 10)
        assert message.type == aiohttp.WSMsgType.BINARY, message
        received += message.data
    return received


def test_the_serial_console_relays_both_ways_and_a_new_session_takes_over(harness: Harness) -> None:
    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            first = await _open(harness, session, "testvmi/console")
            assert first.protocol == "plain.kubevirt.io"
            assert await _receive(first, b"login: ") == b"login: "
            await first.send_bytes(b"root\n")
            assert await _receive(first, b"root\n") == b"root\n"
            second = await _open(harness, session, "testvmi/console")
            assert await _receive(second, b"login: ") == b"login: "
            closed = await asyncio.wait_for(first.receive(), 10)
            assert closed.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
            await second.send_str("text frames are bytes too\n")
            assert await _receive(second, b"too\n") == b"text frames are bytes too\n"
            await second.close()

    asyncio.run(scenario())


def test_a_message_above_1_mib_ends_the_console_with_message_too_big(harness: Harness) -> None:
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            console = await _open(harness, session, "testvmi/console")
            assert await _receive(console, b"login: ") == b"login: "
            half = b"a" * (512 * 1024)  # within the bound: relayed, and echoed back
            await console.send_bytes(half)
            echoed = b""
            while len(echoed) < len(half):
                echoed += (await asyncio.wait_for(console.receive(), 10)).data
            assert echoed == half
            await console.send_bytes(b"b" * (2 * 1024 * 1024))
            message = await asyncio.wait_for(console.receive(), 10)
            seen["close"] = (message.type, message.data)

    asyncio.run(scenario())
    kind, data = seen["close"]  # never the message echoed back
    # 1009, or reset: the server does not read the message's rest, which can beat the close frame.
    assert (kind, data) == (aiohttp.WSMsgType.CLOSE, aiohttp.WSCloseCode.MESSAGE_TOO_BIG) or kind in (
        aiohttp.WSMsgType.CLOSED,
        aiohttp.WSMsgType.ERROR,
    )


def test_vnc_refuses_a_second_client_that_wants_the_first_kept(harness: Harness) -> None:
    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            first = await _open(harness, session, "testvmi/vnc?preserveSession=true")
            assert await _receive(first, b"\n") == b"RFB 003.008\n"
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await _open(harness, session, "testvmi/vnc?preserveSession=true")
            assert refused.value.status == 503
            taking_over = await _open(harness, session, "testvmi/vnc")
            assert await _receive(taking_over, b"\n") == b"RFB 003.008\n"
            await taking_over.close()

    asyncio.run(scenario())


def test_a_request_that_is_no_upgrade_leaves_the_running_console_alone(harness: Harness) -> None:
    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            console = await _open(harness, session, "testvmi/console")
            assert await _receive(console, b"login: ") == b"login: "
            plain = harness.call("GET", "testvmi/console")
            assert plain.status == 400
            await console.send_bytes(b"still here\n")
            assert await _receive(console, b"here\n") == b"still here\n"
            await console.close()

    asyncio.run(scenario())


def test_a_missing_socket_is_refused_before_the_upgrade(harness: Harness) -> None:
    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await _open(harness, session, "testvmi/usbredir")
            assert refused.value.status == 400

    asyncio.run(scenario())


# -- path safety --------------------------------------------------------------------------------


def test_a_symlinked_private_dir_is_not_followed(harness: Harness, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    listener = bind_unix(outside / "virt-serial0")
    private = harness.pods_dir.joinpath(*private_dir(POD_UID, VMI_UID))
    for entry in private.iterdir():
        entry.unlink()
    private.rmdir()
    private.symlink_to(outside)
    with contextlib.closing(listener), pytest.raises(UnsafeSocketError):
        connect_private_socket(harness.pods_dir, POD_UID, VMI_UID, "virt-serial0")

    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await _open(harness, session, "testvmi/console")
            assert refused.value.status == 400

    asyncio.run(scenario())


def test_a_socket_name_that_is_a_symlink_or_a_file_is_refused(pods_dir: Path, tmp_path: Path) -> None:
    private = pods_dir.joinpath(*private_dir(POD_UID, VMI_UID))
    outside = tmp_path / "outside"
    outside.mkdir()
    listener = bind_unix(outside / "host.sock")
    (private / "virt-usbredir-0").symlink_to(outside / "host.sock")
    (private / "virt-usbredir-1").write_text("not a socket")
    with contextlib.closing(listener):
        for name in ("virt-usbredir-0", "virt-usbredir-1", "../virt-vnc", "missing"):
            with pytest.raises(UnsafeSocketError):
                connect_private_socket(pods_dir, POD_UID, VMI_UID, name)
        with pytest.raises(UnsafeSocketError):
            connect_private_socket(pods_dir, "..", VMI_UID, "virt-vnc")
    with contextlib.closing(connect_private_socket(pods_dir, POD_UID, VMI_UID, "virt-vnc")) as vnc:
        assert vnc.recv(12) == b"RFB 003.008\n"


def test_the_client_ca_follows_the_kubevirt_ca_config_map(tmp_path: Path) -> None:
    pki = Pki(CertificateAuthority.create(), tmp_path)
    cert, key = pki.write("server", pki.ca.issue("kubevirt.io:system:node:virt-handler"))
    certificate = ReloadingCertificate(Path(cert), Path(key), require_client_cert=True)
    api = FakeKubeApi()
    follower = ClientCAFollower(api, "kubevirt", certificate)
    assert not follower.refresh()  # no ConfigMap yet: nobody is trusted
    api.add(CONFIG_MAPS, {"metadata": {"name": "kubevirt-ca", "namespace": "kubevirt"}, "data": {}})
    assert not follower.refresh()
    config_map = api.get(CONFIG_MAPS, "kubevirt", "kubevirt-ca")
    config_map["data"] = {"ca-bundle": pki.ca.pair.cert_pem.decode()}
    api.update(CONFIG_MAPS, "kubevirt", config_map)
    assert follower.refresh()
    assert certificate.server_context.verify_mode == ssl.CERT_REQUIRED
    assert len(certificate.server_context.get_ca_certs()) == 1
