"""The APIService objects that put virt-api behind the API server's aggregator
(``components/apiservices.go``): one per subresource version, both pointing at the ``virt-api``
Service, with KubeVirt's priorities, labels and certificate annotation.
"""

from __future__ import annotations

import base64

from kubevirt_api.core.v1.constants import APP_LABEL, APP_LABEL_PREFIX, MANAGED_BY_LABEL_OPERATOR_VALUE
from kubevirt_api.view import JSON

SUBRESOURCE_GROUP = "subresources.kubevirt.io"
SUBRESOURCE_VERSIONS = ("v1", "v1alpha3")
CERTIFICATE_SECRET_ANNOTATION = "certificates.kubevirt.io/secret"
VIRT_API_CERT_SECRET = "kubevirt-virt-api-certs"
MANAGED_BY_LABEL = f"{APP_LABEL_PREFIX}/managed-by"


def subresource_api_services(
    namespace: str, ca_bundle: bytes | None = None, service: str = "virt-api", port: int | None = None
) -> list[JSON]:
    """The APIServices; ``ca_bundle`` (PEM) is what virt-operator injects once it has issued the CA."""
    services = []
    for version in SUBRESOURCE_VERSIONS:
        reference: JSON = {"namespace": namespace, "name": service}
        if port is not None:
            reference["port"] = port
        spec: JSON = {
            "service": reference,
            "group": SUBRESOURCE_GROUP,
            "version": version,
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
        }
        if ca_bundle is not None:
            spec["caBundle"] = base64.b64encode(ca_bundle).decode()
        services.append(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {
                    "name": f"{version}.{SUBRESOURCE_GROUP}",
                    "labels": {
                        APP_LABEL: "virt-api-aggregator",
                        MANAGED_BY_LABEL: MANAGED_BY_LABEL_OPERATOR_VALUE,
                    },
                    "annotations": {CERTIFICATE_SECRET_ANNOTATION: VIRT_API_CERT_SECRET},
                },
                "spec": spec,
            }
        )
    return services
