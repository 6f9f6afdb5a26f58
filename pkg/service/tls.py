"""TLS contexts whose certificates follow the files on disk: a server's (virt-api's port, the agents'
probes) and a client's (virt-api calling virt-handler), so that virt-operator's rotations need no restart.

The certificate and key are re-read when their modification time changes. A new pair is loaded into a
fresh context first and only then swapped in (through the SNI callback, which OpenSSL runs for every
handshake, with or without a server name), so a half-written renewal never breaks serving.

Client certificates are optional by default (the webhooks' callers send none) and verified when sent;
a listener that requires them (virt-handler's console server) refuses every client until it is told a CA.

The KubeVirt CA signs every component's certificate, so a chain to it says only "some KubeVirt
component". Where KubeVirt checks who the peer is (virt-api and the migration source calling
virt-handler, virt-handler's migration listener taking a handler's client certificate), the contexts
here check the peer certificate's common name and extended key usage once the handshake completes,
before any byte is written, and fail the handshake otherwise (KubeVirt's ``verifyPeerCert``).

``spec.configuration.tlsConfiguration`` (KubeVirt's ``GetConfigForClient``, which reads the cluster
configuration at every handshake) reaches a running listener without a restart: the minimum version
is read when each connection is set up (OpenSSL settles the version before any callback could change
it) and the cipher suites at each handshake, through the same SNI callback that swaps in renewed
certificates. TLS 1.0 and 1.1 stay refused whatever the minimum says: OpenSSL 3 refuses them at its
default security level, and lowering that level would weaken every other check too.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubevirt.client import CONFIG_MAPS, ApiError, KubeApi
from kubevirt.log import get_logger
from kubevirt.service.reloading import Reloading, modification_times
from kubevirt.virt_config.tls import GO_CIPHER_SUITES, VERSION_TLS13, TLSConfiguration

# virt-operator's CA bundle: what virt-api and virt-handler trust in each other's certificates.
CA_CONFIG_MAP = "kubevirt-ca"
CA_BUNDLE_KEY = "ca-bundle"

# virt-handler's identities in the certificates virt-operator issues (KubeVirt's "node" and "client"
# names for the virt-handler type).
HANDLER_SERVER_NAME = "kubevirt.io:system:node:virt-handler"
HANDLER_CLIENT_NAME = "kubevirt.io:system:client:virt-handler"

# The client certificate's and key's modification times (None without them) and the trusted bundle.
_ClientStamp = tuple[tuple[int, ...] | None, str | None]
# The certificate's and key's modification times, the trusted client CA and the OpenSSL cipher string.
_ServerStamp = tuple[tuple[int, ...], str | None, str | None]

_MINIMUM_VERSIONS = {VERSION_TLS13: ssl.TLSVersion.TLSv1_3}


@dataclass(frozen=True)
class PeerIdentity:
    """What the peer's certificate must say besides chaining to the trusted CA: an extended key usage
    and, unless certificates are externally managed (issued by the cluster's own PKI), a common name."""

    usage: x509.ObjectIdentifier
    common_name: str | None

    def check(self, der: bytes | None) -> None:
        """Raises :class:`ssl.SSLCertVerificationError` when the certificate is not this identity's."""
        if not der:
            raise ssl.SSLCertVerificationError("no peer certificate provided")
        try:
            cert = x509.load_der_x509_certificate(der)
        except ValueError as err:
            raise ssl.SSLCertVerificationError(f"failed to parse peer certificate: {err}") from None
        try:
            usages: x509.ExtendedKeyUsage | None = cert.extensions.get_extension_for_class(
                x509.ExtendedKeyUsage
            ).value
        except x509.ExtensionNotFound:
            usages = None  # no restriction: any usage, as Go's verifier reads it
        if usages is not None and not (
            self.usage in usages or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usages
        ):
            raise ssl.SSLCertVerificationError(
                "could not verify peer certificate: certificate specifies an incompatible key usage"
            )
        if self.common_name is None:
            return
        names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        common_name = str(names[0].value) if names else ""
        if common_name != self.common_name:
            raise ssl.SSLCertVerificationError(
                f"common name is invalid, expected {self.common_name}, but got {common_name}"
            )


def handler_server_identity(*, externally_managed: bool = False) -> PeerIdentity:
    """virt-handler's serving certificate, as its clients (virt-api, a migration source) expect it."""
    return PeerIdentity(ExtendedKeyUsageOID.SERVER_AUTH, None if externally_managed else HANDLER_SERVER_NAME)


def handler_client_identity(*, externally_managed: bool = False) -> PeerIdentity:
    """virt-handler's client certificate, as a migration target expects it."""
    return PeerIdentity(ExtendedKeyUsageOID.CLIENT_AUTH, None if externally_managed else HANDLER_CLIENT_NAME)


@dataclass(frozen=True)
class TLSPolicy:
    """A ``tlsConfiguration`` as OpenSSL settings: the minimum version and the cipher string for TLS 1.2
    (None: OpenSSL's defaults). TLS 1.3 suites are not configurable, in Go nor here."""

    minimum: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    ciphers: str | None = None


@functools.lru_cache(maxsize=16)
def tls_policy(config: TLSConfiguration) -> TLSPolicy:
    """KubeVirt's reading of ``tlsConfiguration``: TLS 1.2 unless VersionTLS13 (the floor here, see the
    module's notes); names Go does not know are skipped, and none known leaves the defaults. Known
    names that leave no TLS 1.2 suite (only TLS 1.3 ones, or suites this OpenSSL lacks, such as RC4)
    leave only TLS 1.3 to negotiate, as in Go."""
    minimum = _MINIMUM_VERSIONS.get(config.min_tls_version, ssl.TLSVersion.TLSv1_2)
    known = [name for name in config.ciphers if name in GO_CIPHER_SUITES]
    if not known:
        return TLSPolicy(minimum)
    ciphers = ":".join(dict.fromkeys(n for name in known if (n := GO_CIPHER_SUITES[name]) is not None))
    if not ciphers or not _usable(ciphers):
        get_logger().warning(
            "no configured cipher suite is available for TLS 1.2: only TLS 1.3 is accepted",
            ciphers=list(config.ciphers),
        )
        return TLSPolicy(ssl.TLSVersion.TLSv1_3)
    return TLSPolicy(minimum, ciphers)


def _usable(ciphers: str) -> bool:
    # OpenSSL skips names it lacks and refuses a list that leaves nothing for TLS 1.2.
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(ciphers)
    except ssl.SSLError:
        return False
    return True


class _CheckedSocket(ssl.SSLSocket):
    def do_handshake(self, block: bool = False) -> None:
        super().do_handshake(block)
        _check_peer(self.context, self.getpeercert(binary_form=True))


class _CheckedObject(ssl.SSLObject):
    def do_handshake(self) -> None:
        super().do_handshake()
        _check_peer(self.context, self.getpeercert(binary_form=True))


def _check_peer(context: ssl.SSLContext, der: bytes | None) -> None:
    # The context in use after the handshake: a listener's SNI callback may have swapped it.
    if isinstance(context, KubeVirtContext) and context.peer is not None:
        context.peer.check(der)


class KubeVirtContext(ssl.SSLContext):
    """An SSL context whose connections (sockets and asyncio's memory-BIO objects alike) check
    ``peer`` once their handshake completes: a failed check fails the handshake, so nothing is sent to,
    or taken from, a peer with another identity. As a listener it reads ``minimum`` as each connection
    is set up, so a changed ``tlsConfiguration`` applies from the next connection on."""

    sslsocket_class = _CheckedSocket
    sslobject_class = _CheckedObject
    peer: PeerIdentity | None = None
    minimum: Callable[[], ssl.TLSVersion] | None = None

    def _take_minimum(self) -> None:
        if self.minimum is not None:
            self.minimum_version = self.minimum()

    def wrap_socket(
        self,
        sock: socket.socket,
        server_side: bool = False,
        do_handshake_on_connect: bool = True,
        suppress_ragged_eofs: bool = True,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLSocket:
        self._take_minimum()
        return super().wrap_socket(
            sock, server_side, do_handshake_on_connect, suppress_ragged_eofs, server_hostname, session
        )

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        self._take_minimum()
        return super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)


def client_context(
    ca_bundle: str | None, *, cert: tuple[Path, Path] | None = None, peer: PeerIdentity | None = None
) -> KubeVirtContext:
    """A client context trusting ``ca_bundle`` (PEM; the system's CAs without one), presenting ``cert``
    (certificate and key files) and checking ``peer``. Clients keep Go's client defaults (TLS 1.2 and
    up, default suites): KubeVirt applies ``tlsConfiguration`` to its listeners only."""
    context = KubeVirtContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    # virt-handler is dialled by pod IP, which its certificate does not name: ``peer`` says who it is.
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    if ca_bundle:
        context.load_verify_locations(cadata=ca_bundle)
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    context.peer = peer
    return context


def _load(
    cert_file: Path,
    key_file: Path,
    client_ca: str | None = None,
    *,
    required: bool = False,
    ciphers: str | None = None,
    peer: PeerIdentity | None = None,
) -> KubeVirtContext:
    context = KubeVirtContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert_file), str(key_file))
    if ciphers is not None:
        context.set_ciphers(ciphers)
    if required:
        # With no CA loaded yet, no client certificate can be verified: every handshake fails.
        context.verify_mode = ssl.CERT_REQUIRED
    if client_ca:
        _verify_clients(context, client_ca, required=required)
    context.peer = peer
    return context


def _verify_clients(context: ssl.SSLContext, client_ca: str, *, required: bool = False) -> None:
    context.load_verify_locations(cadata=client_ca)
    context.verify_mode = ssl.CERT_REQUIRED if required else ssl.CERT_OPTIONAL


class ReloadingCertificate:
    """Owns the listening socket's SSL context and keeps its certificate and ``tlsConfiguration``
    current. ``tls_config`` is the configuration in force (read per connection, see the module's notes);
    ``peer``, when given, is the identity every client certificate must have."""

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        *,
        interval: float = 2.0,
        require_client_cert: bool = False,
        tls_config: Callable[[], TLSConfiguration] = TLSConfiguration,
        peer: PeerIdentity | None = None,
    ) -> None:
        self._required = require_client_cert
        self._cert_file = cert_file
        self._key_file = key_file
        self._tls_config = tls_config
        self._log = get_logger(cert=str(cert_file))
        self._client_ca: str | None = None
        # Rebuilt when the files, the trusted client CA or the cipher suites change; the first build's
        # errors are raised here.
        self._contexts: Reloading[_ServerStamp, KubeVirtContext] = Reloading(
            lambda: (modification_times(cert_file, key_file), self._client_ca, self._policy().ciphers),
            lambda stamp: _load(
                cert_file, key_file, stamp[1], required=self._required, ciphers=stamp[2], peer=peer
            ),
            log=self._log,
            renewed="serving a renewed TLS certificate or configuration",
            interval=interval,
        )
        self._contexts.refresh()
        # The context given to the listener; each handshake is switched to the current one.
        self.server_context = _load(cert_file, key_file, required=self._required, peer=peer)
        self.server_context.sni_callback = self._select
        self.server_context.minimum = lambda: self._policy().minimum
        self._task: asyncio.Task[None] | None = None

    @property
    def interval(self) -> float:
        return self._contexts.interval

    def _policy(self) -> TLSPolicy:
        return tls_policy(self._tls_config())

    def _select(self, sock: ssl.SSLObject, _server_name: str | None, _ctx: ssl.SSLContext) -> None:
        stamp = self._contexts.stamp
        if stamp is not None and stamp[2] != self._policy().ciphers:
            # The configuration changed since the last look: this handshake already uses it.
            self._contexts.refresh()
        sock.context = self._contexts.in_use

    def trust_client_ca(self, client_ca: str) -> None:
        """Verify client certificates against ``client_ca`` (PEM) from now on; a no-op when unchanged."""
        if client_ca == self._client_ca:
            return
        # The listener's context decides whether a certificate is requested; the swapped-in one verifies it.
        _verify_clients(self.server_context, client_ca, required=self._required)
        self._client_ca = client_ca
        self._contexts.refresh()
        self._log.info("verifying client certificates against a new CA")

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed; returns whether a new certificate is in use."""
        return self._contexts.refresh()

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.reload_if_changed()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


def read_ca_bundle(api: KubeApi, namespace: str, name: str = CA_CONFIG_MAP) -> str | None:
    """The cluster CA bundle from the ``kubevirt-ca`` ConfigMap (None, logged, when unavailable)."""
    try:
        config_map = api.get(CONFIG_MAPS, namespace, name)
    except ApiError as err:
        get_logger().warning("the KubeVirt CA is unavailable", config_map=name, reason=str(err))
        return None
    bundle = (config_map.get("data") or {}).get(CA_BUNDLE_KEY)
    if not bundle:
        get_logger().warning("the KubeVirt CA ConfigMap has no CA bundle", config_map=name)
        return None
    return str(bundle)


class ReloadingClientContext:
    """A client context presenting ``cert_file``/``key_file``, trusting what ``trusted`` returns (a PEM
    bundle, or None to keep the last one) and checking ``peer``. Both are looked at again at most every
    ``interval`` seconds; a change builds a fresh context, and one that cannot be built (mid-rotation)
    keeps the current one."""

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        trusted: Callable[[], str | None],
        *,
        peer: PeerIdentity | None = None,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cert_file = cert_file
        self._key_file = key_file
        self._trusted = trusted
        self._peer = peer
        self._contexts: Reloading[_ClientStamp, ssl.SSLContext] = Reloading(
            self._stamp,
            self._build,
            log=get_logger(cert=str(cert_file)),
            renewed="using a renewed client certificate or CA towards virt-handler",
            interval=interval,
            clock=clock,
        )

    def _stamp(self) -> _ClientStamp:
        try:
            mtimes: tuple[int, ...] | None = modification_times(self._cert_file, self._key_file)
        except OSError:
            mtimes = None  # no client certificate (yet): the context presents none
        last = self._contexts.stamp
        return (mtimes, self._trusted() or (last[1] if last else None))

    def _build(self, stamp: _ClientStamp) -> ssl.SSLContext:
        mtimes, bundle = stamp
        pair = (self._cert_file, self._key_file) if mtimes is not None else None
        return client_context(bundle, cert=pair, peer=self._peer)

    def current(self) -> ssl.SSLContext:
        return self._contexts.current()
