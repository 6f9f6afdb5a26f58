"""TLS contexts whose certificates follow the files on disk: a server's (virt-api's port, the agents'
probes) and a client's (virt-api calling virt-handler), so that virt-operator's rotations need no restart.

The certificate and key are re-read when their modification time changes. A new pair is loaded into a
fresh context first and only then swapped in (through the SNI callback, which OpenSSL runs for every
handshake, with or without a server name), so a half-written renewal never breaks serving.

Client certificates are optional by default (the webhooks' callers send none) and verified when sent;
a listener that requires them (virt-handler's console server) refuses every client until it is told a CA.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Callable
from pathlib import Path

from kubevirt.client import CONFIG_MAPS, ApiError, KubeApi
from kubevirt.log import get_logger
from kubevirt.service.reloading import Reloading, modification_times

# virt-operator's CA bundle: what virt-api and virt-handler trust in each other's certificates.
CA_CONFIG_MAP = "kubevirt-ca"
CA_BUNDLE_KEY = "ca-bundle"

# The client certificate's and key's modification times (None without them) and the trusted bundle.
_ClientStamp = tuple[tuple[int, ...] | None, str | None]


def _load(
    cert_file: Path, key_file: Path, client_ca: str | None = None, *, required: bool = False
) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert_file), str(key_file))
    if required:
        # With no CA loaded yet, no client certificate can be verified: every handshake fails.
        context.verify_mode = ssl.CERT_REQUIRED
    if client_ca:
        _verify_clients(context, client_ca, required=required)
    return context


def _verify_clients(context: ssl.SSLContext, client_ca: str, *, required: bool = False) -> None:
    context.load_verify_locations(cadata=client_ca)
    context.verify_mode = ssl.CERT_REQUIRED if required else ssl.CERT_OPTIONAL


class ReloadingCertificate:
    """Owns the listening socket's SSL context and keeps its certificate current."""

    def __init__(
        self, cert_file: Path, key_file: Path, *, interval: float = 2.0, require_client_cert: bool = False
    ) -> None:
        self._required = require_client_cert
        self._cert_file = cert_file
        self._key_file = key_file
        self._log = get_logger(cert=str(cert_file))
        self._client_ca: str | None = None
        # Rebuilt when the files or the trusted client CA change; the first build's errors are raised here.
        self._contexts = Reloading(
            lambda: (modification_times(cert_file, key_file), self._client_ca),
            lambda stamp: _load(cert_file, key_file, stamp[1], required=self._required),
            log=self._log,
            renewed="serving a renewed TLS certificate",
            interval=interval,
        )
        self._contexts.refresh()
        # The context given to the listener; each handshake is switched to the current one.
        self.server_context = _load(cert_file, key_file, required=self._required)
        self.server_context.sni_callback = self._select
        self._task: asyncio.Task[None] | None = None

    @property
    def interval(self) -> float:
        return self._contexts.interval

    def _select(self, sock: ssl.SSLObject, _server_name: str | None, _ctx: ssl.SSLContext) -> None:
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
    """A client context presenting ``cert_file``/``key_file`` and trusting what ``trusted`` returns (a PEM
    bundle, or None to keep the last one). Both are looked at again at most every ``interval`` seconds; a
    change builds a fresh context, and one that cannot be built (mid-rotation) keeps the current one."""

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        trusted: Callable[[], str | None],
        *,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cert_file = cert_file
        self._key_file = key_file
        self._trusted = trusted
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
        context = ssl.create_default_context(cadata=bundle) if bundle else ssl.create_default_context()
        # virt-handler's certificate names no IP address; the CA that signed it is what identifies it.
        context.check_hostname = False
        if mtimes is not None:
            context.load_cert_chain(str(self._cert_file), str(self._key_file))
        return context

    def current(self) -> ssl.SSLContext:
        return self._contexts.current()
