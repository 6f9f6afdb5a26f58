"""An export's ``status.links`` (KubeVirt v1.6's ``links.go``).

The internal links go to the export's service (``https://<service>.<namespace>.svc``) and carry the
export CA virt-operator publishes; the external ones go through virt-exportproxy's Ingress, when one
exists in KubeVirt's namespace, and carry the certificate its TLS Secret holds for that host. Each served
claim gets its URLs by format; the manifests (the VM and the token Secret) are linked for every export.
OpenShift Routes are not served by this installation.
"""

from __future__ import annotations

import base64
import contextlib
import posixpath
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from kubevirt.controller import Store, key_for
from kubevirt.export import paths
from kubevirt.log import get_logger
from kubevirt.service.certs import EXPORT_CA_CONFIG_MAP
from kubevirt.service.tls import CA_BUNDLE_KEY
from kubevirt_api.export.v1beta1.types import (
    EXPORT_GROUP_NAME,
    EXPORT_VERSIONS,
    FORMAT_ARCHIVE_GZ,
    FORMAT_DIR,
    FORMAT_GZIP,
    FORMAT_RAW,
    MANIFEST_ALL,
    MANIFEST_AUTH_HEADER,
)
from kubevirt_api.view import JSON

EXPORT_PROXY_SERVICE: Final = "virt-exportproxy"
EXTERNAL_URL_FORMAT: Final = (
    f"/api/{EXPORT_GROUP_NAME}/{EXPORT_VERSIONS[0]}/namespaces/{{namespace}}/virtualmachineexports/{{name}}"
)
INTERNAL: Final = "internal"
EXTERNAL: Final = "external"
_SCHEME: Final = "https://"

# The name a served claim is listed under (its own, or the backed-up claim's for snapshots).
VolumeName = Callable[[Mapping[str, Any], Mapping[str, Any]], str]

_log = get_logger(controller="export")


def pvc_volume_name(pvc: Mapping[str, Any], _export: Mapping[str, Any]) -> str:
    return str(pvc["metadata"]["name"])


def go_path_join(*parts: str) -> str:
    """Go's ``path.Join``: the non-empty parts joined by slashes, then cleaned (no trailing slash)."""
    joined = "/".join(part for part in parts if part)
    return posixpath.normpath(joined) if joined else ""


def internal_ca(config_maps: Store[JSON], kubevirt_namespace: str) -> str:
    """The export CA bundle virt-operator publishes ("" until it does)."""
    found = config_maps.get_by_key(key_for(kubevirt_namespace, EXPORT_CA_CONFIG_MAP))
    return str(((found or {}).get("data") or {}).get(CA_BUNDLE_KEY) or "").strip()


def internal_host(service: Mapping[str, Any]) -> str:
    meta = service["metadata"]
    return f"{meta['name']}.{meta.get('namespace')}.svc"


def external_path(export: Mapping[str, Any]) -> str:
    meta = export["metadata"]
    return EXTERNAL_URL_FORMAT.format(namespace=meta.get("namespace"), name=meta["name"])


def ingress_host(ingress: Mapping[str, Any]) -> str:
    """The host of an Ingress that routes to virt-exportproxy ("" for any other Ingress)."""
    spec = ingress.get("spec") or {}
    default_service = (spec.get("defaultBackend") or {}).get("service")
    rules = spec.get("rules") or []
    if default_service is not None:
        if default_service.get("name") != EXPORT_PROXY_SERVICE or not rules:
            return ""
        return str(rules[0].get("host") or "")
    for rule in rules:
        for path in (rule.get("http") or {}).get("paths") or ():
            backend_service = (path.get("backend") or {}).get("service") or {}
            if backend_service.get("name") == EXPORT_PROXY_SERVICE and rule.get("host"):
                return str(rule["host"])
    return ""


class ExternalLinks:
    """Finds virt-exportproxy's host and certificate from the Ingresses and Secrets of KubeVirt's
    namespace (both cached)."""

    def __init__(self, ingresses: Store[JSON], secrets: Store[JSON], kubevirt_namespace: str) -> None:
        self._ingresses = ingresses
        self._secrets = secrets
        self._namespace = kubevirt_namespace

    def host_and_cert(self, now: datetime) -> tuple[str, str]:
        for ingress in self._ingresses.list():
            host = ingress_host(ingress)
            if host:
                return host, self._ingress_cert(host, ingress, now)
        return "", ""

    def _ingress_cert(self, host: str, ingress: Mapping[str, Any], now: datetime) -> str:
        name = next(
            (
                tls["secretName"]
                for tls in (ingress.get("spec") or {}).get("tls") or ()
                if tls.get("secretName")
            ),
            "",
        )
        secret = self._secrets.get_by_key(key_for(self._namespace, name))
        if secret is None:
            return ""
        try:
            certs = x509.load_pem_x509_certificates(
                base64.b64decode((secret.get("data") or {}).get("tls.crt") or "")
            )
        except ValueError as err:
            _log.warning("the export proxy's certificate cannot be read", secret=name, reason=str(err))
            return ""
        return find_cert_by_host(host, certs, now)


def _matches(host: str, name: str) -> bool:
    domain = host.split(".", 1)[1] if "." in host else host
    return name in (host, f"*.{domain}")


def _names(cert: x509.Certificate) -> list[str]:
    names = [str(attr.value) for attr in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    with contextlib.suppress(x509.ExtensionNotFound):
        alternative = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names += alternative.get_values_for_type(x509.DNSName)
    return names


def _valid(cert: x509.Certificate, now: datetime) -> bool:
    return cert.not_valid_before_utc < now < cert.not_valid_after_utc


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def find_cert_by_host(host: str, certs: Sequence[x509.Certificate], now: datetime) -> str:
    """The valid certificate for ``host`` (by name or wildcard; the latest to expire) with its issuers;
    without one, every valid certificate of the bundle; "" for an empty bundle."""
    latest: x509.Certificate | None = None
    for cert in certs:
        if any(_matches(host, name) for name in _names(cert)) and (
            latest is None
            or (cert.not_valid_after_utc > latest.not_valid_after_utc and cert.not_valid_before_utc < now)
        ):
            latest = cert
    if latest is not None and _valid(latest, now):
        return _chain(latest, certs, now)
    return "".join(_pem(cert) for cert in certs if _valid(cert, now)).strip()


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def _common_name(name: x509.Name) -> str:
    found = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(found[0].value) if found else ""


def _chain(cert: x509.Certificate, certs: Sequence[x509.Certificate], now: datetime) -> str:
    out = _pem(cert)
    issuer = _common_name(cert.issuer)
    if issuer != _common_name(cert.subject) and not _is_ca(cert):
        out += find_cert_by_host(issuer, certs, now)
    return out.strip()


def _container_env(pod: Mapping[str, Any]) -> dict[str, str]:
    container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
    return {env["name"]: str(env.get("value") or "") for env in container.get("env") or ()}


def _formats(info: paths.VolumeInfo, host_and_base: str) -> list[JSON]:
    uris = (
        (FORMAT_RAW, info.raw_uri),
        (FORMAT_GZIP, info.raw_gzip_uri),
        (FORMAT_DIR, info.dir_uri),
        (FORMAT_ARCHIVE_GZ, info.archive_uri),
    )
    return [{"format": name, "url": _SCHEME + go_path_join(host_and_base, uri)} for name, uri in uris if uri]


def links(
    pvcs: Sequence[Mapping[str, Any]],
    pod: Mapping[str, Any] | None,
    export: Mapping[str, Any],
    host_and_base: str,
    link_type: str,
    cert: str,
    volume_name: VolumeName,
) -> JSON | None:
    """The links the exporter ``pod`` serves, read back from its environment."""
    if pod is None:
        return None
    served = paths.ServerPaths.from_env(_container_env(pod))
    link: JSON = {"cert": cert}
    manifests = [
        {"type": kind, "url": _SCHEME + go_path_join(host_and_base, link_type, uri)}
        for kind, uri in ((MANIFEST_ALL, served.vm_uri), (MANIFEST_AUTH_HEADER, served.secret_uri))
        if uri
    ]
    volumes = []
    running = (pod.get("status") or {}).get("phase") == "Running"
    for pvc in pvcs if running else ():
        claim = str(pvc["metadata"]["name"])
        info = served.volume_info(claim)
        formats = _formats(info, host_and_base) if info is not None else []
        if not formats:
            _log.warning("volume not served by the exporter pod", volume=claim)
            continue
        volumes.append({"name": volume_name(pvc, export), "formats": formats})
    if volumes:
        link["volumes"] = volumes
    if manifests:
        link["manifests"] = manifests
    return link
