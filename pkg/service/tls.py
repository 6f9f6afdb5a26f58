"""A server TLS context whose certificate follows the files on disk (virt-api's port, the agents' probes).

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
