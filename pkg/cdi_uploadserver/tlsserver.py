"""The listener's TLS: the pod's serving certificate, client certificates verified when given (CDI's
``VerifyClientCertIfGiven``), so that kubelet's readiness probe reaches /healthz without one while an
upload's client is checked by its common name in the request."""

from __future__ import annotations

import ssl

from aiohttp import web
from cryptography import x509
from cryptography.x509.oid import NameOID

from kubevirt.cdi_uploadserver.config import ConfigError, ServerConfig


def server_context(config: ServerConfig) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = config.tls.minimum
    if config.tls.ciphers is not None:
        context.set_ciphers(config.tls.ciphers)
    context.verify_mode = ssl.CERT_OPTIONAL
    try:
        if config.client_ca_file is not None:
            context.load_verify_locations(cafile=str(config.client_ca_file))
        else:
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(config.server_cert_file, config.server_key_file)
    except (OSError, ssl.SSLError) as err:
        raise ConfigError(f"Error getting TLS config: {err}") from None
    context.set_alpn_protocols(["http/1.1"])
    return context


def client_common_names(request: web.Request) -> list[str] | None:
    """The common names of the verified client certificate, None when the client sent none."""
    ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    cert = x509.load_der_x509_certificate(der)
    return [str(attr.value) for attr in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
