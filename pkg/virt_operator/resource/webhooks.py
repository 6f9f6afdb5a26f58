"""The webhook configurations virt-operator installs for virt-api (``components/webhooks.go``).

Which webhooks there are, and their rules and settings, is :mod:`kubevirt.admission.registration`'s table;
this module adds what the operator decides: the virt-api Service they call, the CA bundle they trust and
the annotation naming the Secret of virt-api's certificate.
"""

from __future__ import annotations

import base64

from kubevirt.admission.registration import (
    MUTATING_HOOKS,
    MUTATOR_NAME,
    VALIDATING_HOOKS,
    VALIDATOR_NAME,
    Hook,
    webhook,
)
from kubevirt.apiservices import CERTIFICATE_SECRET_ANNOTATION
from kubevirt.virt_operator.resource.deployments import API_CERT_SECRET
from kubevirt.virt_operator.resource.metadata import MANAGED_BY_LABEL
from kubevirt.virt_operator.resource.services import VIRT_API_SERVICE
from kubevirt_api.core.v1.constants import APP_LABEL, MANAGED_BY_LABEL_OPERATOR_VALUE
from kubevirt_api.view import JSON

VIRT_API_PORT = 443


def client_config(namespace: str, path: str, ca_bundle: bytes | None) -> JSON:
    """virt-api's Service at ``path``; without ``ca_bundle`` (no CA issued yet) the bundle is left out."""
    service = {"namespace": namespace, "name": VIRT_API_SERVICE, "path": path, "port": VIRT_API_PORT}
    config: JSON = {"service": service}
    if ca_bundle is not None:
        config["caBundle"] = base64.b64encode(ca_bundle).decode()
    return config


def _configuration(
    kind: str, name: str, hooks: tuple[Hook, ...], namespace: str, ca_bundle: bytes | None
) -> JSON:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "labels": {APP_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY_LABEL_OPERATOR_VALUE},
            "annotations": {CERTIFICATE_SECRET_ANNOTATION: API_CERT_SECRET},
        },
        "webhooks": [webhook(hook, client_config(namespace, hook.path, ca_bundle)) for hook in hooks],
    }


def mutating_webhook_configuration(namespace: str, ca_bundle: bytes | None = None) -> JSON:
    """``virt-api-mutator``; ``ca_bundle`` is the PEM of the CA that signed virt-api's certificate."""
    return _configuration("MutatingWebhookConfiguration", MUTATOR_NAME, MUTATING_HOOKS, namespace, ca_bundle)


def validating_webhook_configuration(namespace: str, ca_bundle: bytes | None = None) -> JSON:
    """``virt-api-validator``; ``ca_bundle`` as for :func:`mutating_webhook_configuration`."""
    return _configuration(
        "ValidatingWebhookConfiguration", VALIDATOR_NAME, VALIDATING_HOOKS, namespace, ca_bundle
    )
