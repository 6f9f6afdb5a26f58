"""The certificate authorities an importer trusts: the system's, the cluster-wide proxy's CA bundle
(``/proxycerts/``) and the DataVolume's certConfigMap (``IMPORTER_CERT_DIR``)."""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable
from pathlib import Path

from kubevirt.log import get_logger

_PEM_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


class CertDirError(Exception):
    """The configured certificate directory cannot be read."""


def client_context(
    cert_dir: str,
    proxy_cert_dir: Path,
    *,
    insecure: bool = False,
    accept: Callable[[str], bool] = lambda name: True,
) -> ssl.SSLContext:
    """A TLS 1.2+ client context trusting the system roots plus every certificate in the files of
    ``proxy_cert_dir`` and ``cert_dir`` whose names ``accept`` takes (dot files, which are a mounted
    ConfigMap's bookkeeping, never). ``insecure`` turns verification off."""
    context = ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if proxy_cert_dir.is_dir():
        _load_dir(context, proxy_cert_dir, accept)
    if cert_dir:
        try:
            _load_dir(context, Path(cert_dir), accept)
        except OSError as err:
            raise CertDirError(f"Error listing files in {cert_dir}: {err.strerror or err}") from err
    return context


def _load_dir(context: ssl.SSLContext, directory: Path, accept: Callable[[str], bool]) -> None:
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith(".") or entry.is_dir() or not accept(entry.name):
            continue
        certificates = _PEM_CERTIFICATE.findall(entry.read_bytes())
        if not certificates:
            get_logger().warning("no certificates in file", file=str(entry))
        for pem in certificates:
            try:
                context.load_verify_locations(cadata=pem.decode("ascii", errors="replace"))
            except ssl.SSLError as err:
                get_logger().warning(
                    "skipping a certificate that does not parse", file=str(entry), error=str(err)
                )
