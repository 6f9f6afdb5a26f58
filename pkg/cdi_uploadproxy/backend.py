"""The TLS towards upload servers (CDI's ``clientCreator``): the proxy's client certificate from its files,
trust in the ``cdi-uploadserver-signer-bundle`` ConfigMap's CA bundle. Both are read for every request, as
CDI does, so that rotations apply at once; a context is built again only when either changed."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path

from kubevirt.client import CONFIG_MAPS, ApiError, KubeReader
from kubevirt.log import get_logger
from kubevirt.service.reloading import modification_times

# The key cert rotation writes signer bundles under (CDI's fetcher reads this one).
CA_BUNDLE_KEY = "ca-bundle.crt"

# Client certificate and key modification times, and the CA bundle.
_Stamp = tuple[tuple[int, ...], str]


class TrustUnavailableError(Exception):
    """No client for upload servers can be made: a file, the ConfigMap or its bundle is missing or broken."""


def read_bundle(api: KubeReader, namespace: str, name: str) -> str:
    """The CA bundle of ConfigMap ``name``; raises :class:`TrustUnavailableError` without one."""
    try:
        config_map = api.get(CONFIG_MAPS, namespace, name)
    except ApiError as err:
        raise TrustUnavailableError(f"configmap {name}: {err}") from None
    data = config_map.get("data") or {}
    if CA_BUNDLE_KEY not in data:
        raise TrustUnavailableError("CA bundle missing")
    return str(data[CA_BUNDLE_KEY])


def upload_client_context(cert_file: Path, key_file: Path, bundle: str) -> ssl.SSLContext:
    """Presents the client certificate, trusts ``bundle`` only and checks that the server's certificate
    names the Service dialled (Go's defaults). A bundle holding no certificate is logged and trusts nothing:
    every handshake then fails, as CDI's empty pool makes it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert_file), str(key_file))
    try:
        context.load_verify_locations(cadata=bundle)
    except (ssl.SSLError, ValueError) as err:
        get_logger().error("Error parsing uploadserver CA bundle", reason=str(err))
    return context


class UploadServerTrust:
    """The client context for upload servers, current as of the call."""

    def __init__(self, cert_file: Path, key_file: Path, bundle: Callable[[], str]) -> None:
        self._cert_file = cert_file
        self._key_file = key_file
        self._bundle = bundle
        self._built: tuple[_Stamp, ssl.SSLContext] | None = None

    def context(self) -> ssl.SSLContext:
        """Reads the files' times and the bundle (blocking: call it from a thread)."""
        try:
            stamp = (modification_times(self._cert_file, self._key_file), self._bundle())
        except OSError as err:
            raise TrustUnavailableError(f"client certificate: {err}") from None
        if self._built is not None and self._built[0] == stamp:
            return self._built[1]
        try:
            context = upload_client_context(self._cert_file, self._key_file, stamp[1])
        except (OSError, ssl.SSLError) as err:
            raise TrustUnavailableError(f"client certificate: {err}") from None
        self._built = (stamp, context)
        return context
