"""The upload path's certificates under the ``DataImporter`` gate, as CDI v1.63's cert factory defines
them (``pkg/operator/resources/cert/factory.go``), issued and rotated by the operator's own machinery
(:func:`kubevirt.virt_operator.certificates.issue`) in CDI's namespace.

Four signers, each a ``kubernetes.io/tls`` Secret with its bundle ConfigMap ``<signer>-bundle`` (key
``ca-bundle.crt``, as CDI's): cdi-apiserver's and cdi-uploadproxy's sign those Services' server
certificates, the upload server's signs (in cdi-controller) each upload pod's certificate, and the
client signer signs the certificate cdi-uploadproxy shows the upload servers. Lifetimes are CDI's
defaults, not the KubeVirt CR's: a signer lives 48 h and is replaced after 24 h, a server or client
certificate lives 24 h and is replaced after 12 h; a replaced signer stays in its bundle for 24 h.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kubevirt.virt_operator.certificates import (
    Authority,
    CertificateSpec,
    RotationPolicy,
    issue,
)
from kubevirt_api.cdi.constants import CDI_NAMESPACE, Upload
from kubevirt_api.view import JSON

BUNDLE_KEY: Final = "ca-bundle.crt"
SIGNER_LIFETIME: Final = datetime.timedelta(hours=48)
SIGNER_REFRESH: Final = datetime.timedelta(hours=24)
TARGET_LIFETIME: Final = datetime.timedelta(hours=24)
TARGET_REFRESH: Final = datetime.timedelta(hours=12)
# CDI states when to refresh (from NotBefore); the machinery takes how long before expiry.
CDI_POLICY: Final = RotationPolicy(
    ca_duration=SIGNER_LIFETIME,
    ca_renew_before=SIGNER_LIFETIME - SIGNER_REFRESH,
    cert_duration=TARGET_LIFETIME,
    cert_renew_before=TARGET_LIFETIME - TARGET_REFRESH,
)


def _authority(secret: str, bundle: str) -> Authority:
    # library-go names a signer <namespace>_<secret>; the key identifiers tell rotated ones apart.
    return Authority(secret, f"{CDI_NAMESPACE}_{secret}", bundle, BUNDLE_KEY)


# cdi-apiserver's first: its bundle is the APIService's caBundle.
AUTHORITIES: Final = (
    _authority(Upload.APISERVER_SIGNER, Upload.APISERVER_SIGNER_BUNDLE),
    _authority(Upload.PROXY_SIGNER, Upload.PROXY_SIGNER_BUNDLE),
    _authority(Upload.SERVER_SIGNER, Upload.SERVER_SIGNER_BUNDLE),
    _authority(Upload.CLIENT_SIGNER, Upload.CLIENT_SIGNER_BUNDLE),
)
TARGETS: Final = (
    CertificateSpec(
        Upload.APISERVER_SERVER_CERT,
        "server",
        Upload.API_SERVICE,
        Upload.API_SERVICE,
        signer=Upload.APISERVER_SIGNER,
    ),
    CertificateSpec(
        Upload.PROXY_SERVER_CERT, "server", Upload.PROXY, Upload.PROXY, signer=Upload.PROXY_SIGNER
    ),
    CertificateSpec(Upload.CLIENT_CERT, "client", Upload.CLIENT_NAME, signer=Upload.CLIENT_SIGNER),
)


def secret_names() -> list[str]:
    """Every Secret issued here: the signers, then the targets."""
    return [*(authority.secret for authority in AUTHORITIES), *(spec.secret for spec in TARGETS)]


def bundle_names() -> list[str]:
    return [authority.bundle for authority in AUTHORITIES]


@dataclass(frozen=True)
class CdiIssued:
    secrets: list[JSON]
    config_maps: list[JSON]
    # cdi-apiserver's signer bundle (PEM), for the upload APIService.
    api_ca_bundle: bytes
    next_rotation: datetime.datetime


def reconcile_cdi_certificates(
    secrets: Mapping[str, JSON], config_maps: Mapping[str, JSON], now: datetime.datetime
) -> CdiIssued:
    """The signers, bundles and target Secrets in CDI's namespace as they must be at ``now``, from those
    of that namespace by name."""
    issued = issue(AUTHORITIES, TARGETS, CDI_NAMESPACE, CDI_POLICY, secrets, config_maps, now)
    return CdiIssued(issued.secrets, issued.config_maps, issued.ca_bundle, issued.next_rotation)
