"""The TLS material of an upload server pod: a server certificate for the claim's upload Service, signed
by the upload server signer (Secret ``cdi-uploadserver-signer`` in CDI's namespace, ``tls.crt`` and
``tls.key``), and the bundle of the CA that signs the upload proxy's client certificate (ConfigMap
``cdi-uploadserver-client-signer-bundle``, key ``ca-bundle.crt``).

Lifetimes follow the CDI CR's ``spec.certConfig`` (CDI's GetCertConfigWithDefaults: 24 h certificates
renewed 12 h before they end). The server is told to stop at the earlier of the server and client
certificates' refresh times (its DEADLINE), after which the controller replaces the pod.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubevirt.client import CONFIG_MAPS, KubeReader
from kubevirt.client.errors import NotFoundError
from kubevirt.client.resources import SECRETS
from kubevirt.service.certs import CertificateSpec, KeyPair, load_pair, new_certificate
from kubevirt.service.durations import parse_go_duration
from kubevirt_api.cdi.constants import Upload

BUNDLE_KEY = "ca-bundle.crt"
DEFAULT_LIFETIME = datetime.timedelta(hours=24)
DEFAULT_RENEW_BEFORE = datetime.timedelta(hours=12)

Clock = Callable[[], datetime.datetime]


class UploadCertError(Exception):
    """The signer or the client CA bundle is missing or unusable."""


@dataclass(frozen=True)
class Lifetime:
    duration: datetime.timedelta = DEFAULT_LIFETIME
    renew_before: datetime.timedelta = DEFAULT_RENEW_BEFORE

    @property
    def refresh(self) -> datetime.timedelta:
        return self.duration - self.renew_before


@dataclass(frozen=True)
class CertConfig:
    server: Lifetime = Lifetime()
    client: Lifetime = Lifetime()


@dataclass(frozen=True)
class ServerTLS:
    """What goes into the pod's Secret, and when the server must stop."""

    cert_pem: bytes
    key_pem: bytes
    client_ca_pem: bytes
    deadline: datetime.datetime


@dataclass(frozen=True)
class ClientTLS:
    """A clone source pod's client certificate and the CA bundle of the upload servers."""

    cert_pem: bytes
    key_pem: bytes
    server_ca_pem: bytes


def cert_config(cdi_cr: Mapping[str, Any] | None) -> CertConfig:
    """The CDI CR's server and client lifetimes; each one incomplete or unreadable is the default."""
    config = ((cdi_cr or {}).get("spec") or {}).get("certConfig") or {}
    return CertConfig(server=_lifetime(config.get("server")), client=_lifetime(config.get("client")))


def _lifetime(value: Mapping[str, Any] | None) -> Lifetime:
    if not value or value.get("duration") is None or value.get("renewBefore") is None:
        return Lifetime()
    try:
        duration = parse_go_duration(str(value["duration"]))
        renew_before = parse_go_duration(str(value["renewBefore"]))
    except ValueError:
        return Lifetime()
    return Lifetime(
        datetime.timedelta(microseconds=duration / 1000), datetime.timedelta(microseconds=renew_before / 1000)
    )


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class ServerCertIssuer:
    """Issues each upload server's certificate (and each clone source pod's client certificate); the
    signers and the bundles are read when needed."""

    def __init__(self, api: KubeReader, namespace: str, *, now: Clock = _utc_now) -> None:
        self._api = api
        self._namespace = namespace
        self._now = now

    def issue(self, namespace: str, service: str, config: CertConfig) -> ServerTLS:
        """A certificate for ``service`` in ``namespace`` (its short and namespaced DNS names)."""
        ca = self._signer(Upload.SERVER_SIGNER)
        now = self._now()
        spec = CertificateSpec(
            secret="", kind="server", common_name=service, service=service, signer=Upload.SERVER_SIGNER
        )
        pair = new_certificate(spec, ca, namespace, now, config.server.duration)
        return ServerTLS(
            cert_pem=pair.cert_pem,
            key_pem=pair.key_pem,
            client_ca_pem=self._client_bundle(),
            deadline=now + min(config.server.refresh, config.client.refresh),
        )

    def issue_client(self, common_name: str, config: CertConfig) -> ClientTLS:
        """A client certificate for ``common_name`` (a clone source pod's), signed by the client signer the
        upload servers trust, with the bundle that verifies the servers."""
        ca = self._signer(Upload.CLIENT_SIGNER)
        spec = CertificateSpec(secret="", kind="client", common_name=common_name, signer=Upload.CLIENT_SIGNER)
        pair = new_certificate(spec, ca, self._namespace, self._now(), config.client.duration)
        return ClientTLS(
            cert_pem=pair.cert_pem,
            key_pem=pair.key_pem,
            server_ca_pem=self._bundle(Upload.SERVER_SIGNER_BUNDLE),
        )

    def _signer(self, name: str) -> KeyPair:
        try:
            signer = self._api.get(SECRETS, self._namespace, name)
        except NotFoundError as err:
            raise UploadCertError(f"secret {self._namespace}/{name} not found") from err
        ca = load_pair(signer)
        if ca is None:
            raise UploadCertError(f"secret {self._namespace}/{name} holds no usable signer")
        return ca

    def _client_bundle(self) -> bytes:
        return self._bundle(Upload.CLIENT_SIGNER_BUNDLE)

    def _bundle(self, name: str) -> bytes:
        try:
            config_map = self._api.get(CONFIG_MAPS, self._namespace, name)
        except NotFoundError as err:
            raise UploadCertError(f"configmap {self._namespace}/{name} not found") from err
        bundle = (config_map.get("data") or {}).get(BUNDLE_KEY)
        if not bundle:
            raise UploadCertError("CA bundle missing")
        return str(bundle).encode()
