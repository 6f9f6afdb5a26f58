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

# virt-operator's CA bundle: what virt-api and virt-handler trust in each other's certificates.
CA_CONFIG_MAP = "kubevirt-ca"
CA_BUNDLE_KEY = "ca-bundle"


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
        self.interval = interval
        self._log = get_logger(cert=str(cert_file))
        self._stamp = self._mtimes()
        self._client_ca: str | None = None
        self._current = _load(cert_file, key_file, required=self._required)
        # The context given to the listener; each handshake is switched to the current one.
        self.server_context = _load(cert_file, key_file, required=self._required)
        self.server_context.sni_callback = self._select
        self._task: asyncio.Task[None] | None = None

    def _mtimes(self) -> tuple[int, int]:
        return (self._cert_file.stat().st_mtime_ns, self._key_file.stat().st_mtime_ns)

    def _select(self, sock: ssl.SSLObject, _server_name: str | None, _ctx: ssl.SSLContext) -> None:
        sock.context = self._current

    def trust_client_ca(self, client_ca: str) -> None:
        """Verify client certificates against ``client_ca`` (PEM) from now on; a no-op when unchanged."""
        if client_ca == self._client_ca:
            return
        fresh = _load(self._cert_file, self._key_file, client_ca, required=self._required)
        # The listener's context decides whether a certificate is requested; the swapped-in one verifies it.
        _verify_clients(self.server_context, client_ca, required=self._required)
        self._client_ca = client_ca
        self._current = fresh
        self._log.info("verifying client certificates against a new CA")

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed; returns whether a new certificate is in use."""
        try:
            stamp = self._mtimes()
        except OSError as err:
            self._log.warning("certificate files unreadable, keeping the current one", reason=str(err))
            return False
        if stamp == self._stamp:
            return False
        try:
            fresh = _load(self._cert_file, self._key_file, self._client_ca, required=self._required)
        except (OSError, ssl.SSLError) as err:
            # Likely mid-rotation (certificate written, key not yet): try again on the next tick.
            self._log.warning("new certificate not loadable yet", reason=str(err))
            return False
        self._current = fresh
        self._stamp = stamp
        self._log.info("serving a renewed TLS certificate")
        return True

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
        self._interval = interval
        self._clock = clock
        self._log = get_logger(cert=str(cert_file))
        self._checked_at: float | None = None
        self._stamp: tuple[tuple[int, int] | None, str | None] = (None, None)
        self._context: ssl.SSLContext | None = None

    def _mtimes(self) -> tuple[int, int] | None:
        try:
            return (self._cert_file.stat().st_mtime_ns, self._key_file.stat().st_mtime_ns)
        except OSError:
            return None

    def _build(self, bundle: str | None, has_pair: bool) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=bundle) if bundle else ssl.create_default_context()
        # virt-handler's certificate names no IP address; the CA that signed it is what identifies it.
        context.check_hostname = False
        if has_pair:
            context.load_cert_chain(str(self._cert_file), str(self._key_file))
        return context

    def current(self) -> ssl.SSLContext:
        now = self._clock()
        if (
            self._context is not None
            and self._checked_at is not None
            and now - self._checked_at < self._interval
        ):
            return self._context
        self._checked_at = now
        bundle = self._trusted() or self._stamp[1]
        stamp = (self._mtimes(), bundle)
        if self._context is not None and stamp == self._stamp:
            return self._context
        try:
            fresh = self._build(bundle, stamp[0] is not None)
        except (OSError, ssl.SSLError) as err:
            if self._context is None:
                raise
            self._log.warning("renewed client certificate or CA not loadable yet", reason=str(err))
            return self._context
        if self._context is not None:
            self._log.info("using a renewed client certificate or CA towards virt-handler")
        self._context, self._stamp = fresh, stamp
        return fresh
