"""The migration proxies: a source pod's unix socket to a target pod's unix socket over mutual TLS on
loopback, two handlers' proxy managers in between; pod paths stay inside the pod's root."""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.podroot import PodRoot
from kubevirt.service.tls import HANDLER_CLIENT_NAME, HANDLER_SERVER_NAME
from kubevirt.virt_config.tls import TLSConfiguration
from kubevirt.virt_handler.migration_proxy import (
    MigrationProxyError,
    ProxyManager,
    TLSFiles,
    TLSProvider,
    bind_unix_in_pod,
    unix_opener,
)
from kubevirt_testing.certificates import CertificateAuthority, KeyPair, write_pair
from kubevirt_testing.migration_tls import migration_tls
from kubevirt_testing.tls_recorder import TLSRecorder


def echo_server(path: str) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(4)

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                with conn:
                    while data := conn.recv(65536):
                        conn.sendall(data.upper())

    threading.Thread(target=serve, daemon=True).start()
    return listener


@pytest.fixture
def pods(tmp_path: Path) -> Iterator[tuple[PodRoot, PodRoot]]:
    source, target = tmp_path / "source", tmp_path / "target"
    for root in (source, target):
        (root / "var/run/kubevirt/migrationproxy").mkdir(parents=True)
    with contextlib.chdir(target / "var/run/kubevirt/migrationproxy"):
        listener = echo_server("qemu.sock")  # stands for the target QEMU's incoming socket
    yield PodRoot(source), PodRoot(target)
    listener.close()


def test_bytes_cross_from_pod_to_pod_over_mutual_tls(tmp_path: Path, pods: tuple[PodRoot, PodRoot]) -> None:
    ca = CertificateAuthority.create()
    source_tls, target_tls = (
        migration_tls(tmp_path / "node-a", ca, "node-a"),
        migration_tls(tmp_path / "node-b", ca, "node-b"),
    )
    source = ProxyManager(listen_address="127.0.0.1", tls=lambda: source_tls)
    target = ProxyManager(listen_address="127.0.0.1", tls=lambda: target_tls)
    try:
        ports = target.start_target(
            "vmi", {49152: unix_opener(pods[1], "/var/run/kubevirt/migrationproxy", "qemu.sock")}
        )
        [(port, pod_port)] = ports.items()
        assert pod_port == 49152
        listener = bind_unix_in_pod(pods[0], "/var/run/kubevirt/migrationproxy", "vmi-49152-source.sock")
        source.start_source("vmi", [(listener, "127.0.0.1", int(port))])

        with (
            contextlib.chdir(pods[0].root / "var/run/kubevirt/migrationproxy"),
            socket.socket(socket.AF_UNIX) as qemu,
        ):
            qemu.connect("vmi-49152-source.sock")
            qemu.sendall(b"guest memory")
            assert qemu.recv(100) == b"GUEST MEMORY"

        # Without a certificate from the cluster CA the target listener lets nobody in.
        stranger = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        stranger.check_hostname = False
        stranger.verify_mode = ssl.CERT_NONE
        with socket.create_connection(("127.0.0.1", int(port))) as raw:
            conn = stranger.wrap_socket(raw)
            try:
                conn.sendall(b"hello")
                reply = conn.recv(100)
            except (ssl.SSLError, OSError):
                reply = b""
            assert reply == b""  # refused: the pod's socket never saw it
    finally:
        source.shut_down()
        target.shut_down()


def _proxied(source: ProxyManager, pods: tuple[PodRoot, PodRoot], port: int, data: bytes) -> bytes:
    """What the source pod's QEMU gets back for ``data`` sent through a source proxy to ``port``."""
    listener = bind_unix_in_pod(pods[0], "/var/run/kubevirt/migrationproxy", "vmi-49152-source.sock")
    source.start_source("vmi", [(listener, "127.0.0.1", port)])
    with (
        contextlib.chdir(pods[0].root / "var/run/kubevirt/migrationproxy"),
        socket.socket(socket.AF_UNIX) as qemu,
    ):
        qemu.settimeout(10)
        qemu.connect("vmi-49152-source.sock")
        try:
            # A proxy that refused its target may already have hung up on QEMU (a broken pipe).
            qemu.sendall(data)
            return qemu.recv(100)
        except OSError:
            return b""


def test_the_source_sends_nothing_to_a_target_with_another_identity_from_the_same_ca(
    tmp_path: Path, pods: tuple[PodRoot, PodRoot]
) -> None:
    ca = CertificateAuthority.create()
    # The cluster CA signs virt-api's serving certificate too: a chain to it is not virt-handler.
    cert, key = write_pair(ca.issue("virt-api.kubevirt.pod.cluster.local"), tmp_path, "impostor")
    impostor = TLSRecorder(cert, key)
    source = ProxyManager(listen_address="127.0.0.1", tls=lambda: migration_tls(tmp_path / "a", ca, "node-a"))
    try:
        assert _proxied(source, pods, impostor.port, b"guest memory") == b""
        assert impostor.received == b""
    finally:
        source.shut_down()
        impostor.close()


def test_the_target_takes_only_virt_handler_s_client_identity(
    tmp_path: Path, pods: tuple[PodRoot, PodRoot]
) -> None:
    ca = CertificateAuthority.create()
    target = ProxyManager(listen_address="127.0.0.1", tls=lambda: migration_tls(tmp_path / "b", ca, "node-b"))
    try:
        ports = target.start_target(
            "vmi", {49152: unix_opener(pods[1], "/var/run/kubevirt/migrationproxy", "qemu.sock")}
        )
        port = int(next(iter(ports)))

        def send(client: KeyPair) -> bytes:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.load_verify_locations(cadata=ca.pair.cert_pem.decode())
            cert, key = write_pair(client, tmp_path, "client")
            context.load_cert_chain(cert, key)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                try:
                    with context.wrap_socket(raw) as conn:
                        conn.sendall(b"guest memory")
                        return conn.recv(100)
                except OSError:
                    return b""

        assert send(ca.issue(HANDLER_CLIENT_NAME, client=True)) == b"GUEST MEMORY"
        # A client certificate of the same CA for another identity: the pod's socket never sees it.
        assert send(ca.issue("kubevirt.io:system:client:someone", client=True)) == b""
    finally:
        target.shut_down()


def test_the_target_listener_follows_the_cluster_tls_configuration(
    tmp_path: Path, pods: tuple[PodRoot, PodRoot]
) -> None:
    ca = CertificateAuthority.create()
    setting = {"tls": TLSConfiguration("VersionTLS13")}
    target_tls = migration_tls(tmp_path / "b", ca, "node-b", tls_config=lambda: setting["tls"])
    client = migration_tls(tmp_path / "a", ca, "node-a").client
    target = ProxyManager(listen_address="127.0.0.1", tls=lambda: target_tls)
    try:
        ports = target.start_target(
            "vmi", {49152: unix_opener(pods[1], "/var/run/kubevirt/migrationproxy", "qemu.sock")}
        )
        port = int(next(iter(ports)))

        def version(maximum: ssl.TLSVersion) -> str | None:
            client.maximum_version = maximum
            with (
                socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
                client.wrap_socket(raw) as conn,
            ):
                conn.sendall(b"x")
                assert conn.recv(10) == b"X"
                return conn.version()

        with pytest.raises(ssl.SSLError):
            version(ssl.TLSVersion.TLSv1_2)
        assert version(ssl.TLSVersion.TLSv1_3) == "TLSv1.3"
        # Lowered in the CR: the running listener takes TLS 1.2 from its next connection on.
        setting["tls"] = TLSConfiguration("VersionTLS12")
        assert version(ssl.TLSVersion.TLSv1_2) == "TLSv1.2"
    finally:
        target.shut_down()


def test_a_pod_link_out_of_its_root_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "var/run/kubevirt").mkdir(parents=True)
    outside = tmp_path / "host-dir"
    outside.mkdir()
    os.symlink(str(outside), root / "var/run/kubevirt/migrationproxy")  # absolute: the host's directory
    with pytest.raises(MigrationProxyError):
        bind_unix_in_pod(PodRoot(root), "/var/run/kubevirt/migrationproxy", "x-source.sock")
    assert list(outside.iterdir()) == []


def test_the_source_socket_makes_the_directory_a_fresh_launcher_pod_lacks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "var/run/kubevirt").mkdir(parents=True)
    listener = bind_unix_in_pod(PodRoot(root), "/var/run/kubevirt/migrationproxy", "x-source.sock")
    try:
        assert stat.S_ISSOCK(os.lstat(root / "var/run/kubevirt/migrationproxy/x-source.sock").st_mode)
    finally:
        listener.close()


def test_tls_is_off_only_when_disabled_and_missing_certificates_refuse(tmp_path: Path) -> None:
    files = TLSFiles(tmp_path / "a", tmp_path / "b", tmp_path / "c", tmp_path / "d")
    assert TLSProvider(files, ca_bundle=lambda: "pem", disabled=lambda: True)() is None
    with pytest.raises(MigrationProxyError, match="disableTLS"):
        TLSProvider(files, ca_bundle=lambda: "pem", disabled=lambda: False)()


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> bool:
    """Whether a client with ``client`` and a server with ``server`` agree on a mutual-TLS session."""
    left, right = socket.socketpair()
    outcome: dict[str, bool] = {}

    def serve() -> None:
        try:
            with server.wrap_socket(right, server_side=True) as tls:
                tls.recv(1)
                outcome["server"] = True
        except (OSError, ssl.SSLError):
            outcome["server"] = False

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with client.wrap_socket(left) as tls:
            tls.sendall(b"x")
    except (OSError, ssl.SSLError):
        outcome["client"] = False
    thread.join(10)
    return outcome.get("server", False) and outcome.get("client", True)


def write_pairs(directory: Path, ca: CertificateAuthority, stamp: int) -> TLSFiles:
    server, client = ca.issue(HANDLER_SERVER_NAME), ca.issue(HANDLER_CLIENT_NAME, client=True)
    directory.mkdir(parents=True, exist_ok=True)
    files = TLSFiles(
        directory / "tls.crt", directory / "tls.key", directory / "client.crt", directory / "client.key"
    )
    for path, data in zip(
        (files.cert_file, files.key_file, files.client_cert_file, files.client_key_file),
        (server.cert_pem, server.key_pem, client.cert_pem, client.key_pem),
        strict=True,
    ):
        path.write_bytes(data)
        os.utime(path, ns=(stamp, stamp))  # rotations are seconds apart; the test is not
    return files


def test_migration_tls_follows_a_rotation_and_keeps_the_last_good_pair_mid_rotation(tmp_path: Path) -> None:
    old_ca, new_ca = CertificateAuthority.create(), CertificateAuthority.create()
    bundle = {"pem": old_ca.pair.cert_pem.decode()}
    files = write_pairs(tmp_path / "node-a", old_ca, 1_000_000_000)
    provider = TLSProvider(files, ca_bundle=lambda: bundle["pem"], disabled=lambda: False)
    first = provider()
    assert first is not None
    assert provider() is first  # nothing changed: nothing rebuilt

    # virt-operator rotates the CA and the node's certificates; the peer already has the new ones.
    peer = migration_tls(tmp_path / "node-b", new_ca, "node-b")
    assert not handshake(peer.server, first.client)
    bundle["pem"] = new_ca.pair.cert_pem.decode()
    write_pairs(tmp_path / "node-a", new_ca, 2_000_000_000)
    rotated = provider()
    assert rotated is not None
    assert rotated is not first
    assert handshake(peer.server, rotated.client)
    assert handshake(rotated.server, peer.client)

    # Caught mid-rotation: the new client certificate is there, its key not yet.
    files.client_cert_file.write_bytes(new_ca.issue(HANDLER_CLIENT_NAME, client=True).cert_pem)
    os.utime(files.client_cert_file, ns=(3_000_000_000, 3_000_000_000))
    assert provider() is rotated


def test_a_socket_swapped_for_a_link_is_not_dialled(tmp_path: Path, pods: tuple[PodRoot, PodRoot]) -> None:
    # Each connection opens the pod's socket anew: a link put in its place since (here to a socket
    # outside the pod, where a host service would listen) is refused, not followed.
    _, target = pods
    opener = unix_opener(target, "/var/run/kubevirt/migrationproxy", "qemu.sock")
    opener().close()
    outside = tmp_path / "outside"
    outside.mkdir()
    with contextlib.chdir(outside):
        host_service = echo_server("host.sock")
    proxies = target.root / "var/run/kubevirt/migrationproxy"
    (proxies / "qemu.sock").unlink()
    (proxies / "qemu.sock").symlink_to(outside / "host.sock")
    with pytest.raises(MigrationProxyError, match=r"qemu\.sock: a symlink"):
        opener()
    host_service.close()
