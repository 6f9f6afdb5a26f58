"""virt-api's admission webhook configurations (KubeVirt's ``components/webhooks.go``), limited to the
webhooks this project's virt-api serves: a webhook whose path answered 404 would fail every request
it intercepts."""

from __future__ import annotations

import base64

from kubevirt.virt_operator.resource.deployments import API_CERT_SECRET
from kubevirt.virt_operator.resource.services import VIRT_API_SERVICE
from kubevirt_api.core.v1.constants import APP_LABEL, GROUP_NAME, POOL_GROUP_NAME
from kubevirt_api.view import JSON

VALIDATOR = "virt-api-validator"
MUTATOR = "virt-api-mutator"
CERTIFICATE_SECRET_ANNOTATION = "certificates.kubevirt.io/secret"
WEBHOOK_VERSIONS = ["v1alpha3", "v1"]
CREATE, UPDATE = "CREATE", "UPDATE"

# name, operations, group, resources, path
_MUTATING: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...], str], ...] = (
    (
        "virtualmachines-mutator.kubevirt.io",
        (CREATE, UPDATE),
        GROUP_NAME,
        ("virtualmachines",),
        "/virtualmachines-mutate",
    ),
    (
        "virtualmachineinstances-mutator.kubevirt.io",
        (CREATE, UPDATE),
        GROUP_NAME,
        ("virtualmachineinstances",),
        "/virtualmachineinstances-mutate",
    ),
    (
        "migrations-mutator.kubevirt.io",
        (CREATE,),
        GROUP_NAME,
        ("virtualmachineinstancemigrations",),
        "/migration-mutate-create",
    ),
)
_VALIDATING: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...], str], ...] = (
    (
        "virtualmachineinstances-create-validator.kubevirt.io",
        (CREATE,),
        GROUP_NAME,
        ("virtualmachineinstances",),
        "/virtualmachineinstances-validate-create",
    ),
    (
        "virtualmachineinstances-update-validator.kubevirt.io",
        (UPDATE,),
        GROUP_NAME,
        ("virtualmachineinstances",),
        "/virtualmachineinstances-validate-update",
    ),
    (
        "virtualmachine-validator.kubevirt.io",
        (CREATE, UPDATE),
        GROUP_NAME,
        ("virtualmachines",),
        "/virtualmachines-validate",
    ),
    (
        "virtualmachinereplicaset-validator.kubevirt.io",
        (CREATE, UPDATE),
        GROUP_NAME,
        ("virtualmachineinstancereplicasets",),
        "/virtualmachinereplicaset-validate",
    ),
    (
        "virtualmachinepool-validator.kubevirt.io",
        (CREATE, UPDATE),
        POOL_GROUP_NAME,
        ("virtualmachinepools",),
        "/virtualmachinepool-validate",
    ),
    (
        "migration-create-validator.kubevirt.io",
        (CREATE,),
        GROUP_NAME,
        ("virtualmachineinstancemigrations",),
        "/migration-validate-create",
    ),
    (
        "migration-update-validator.kubevirt.io",
        (UPDATE,),
        GROUP_NAME,
        ("virtualmachineinstancemigrations",),
        "/migration-validate-update",
    ),
    (
        "kubevirt-crd-status-validator.kubevirt.io",
        (CREATE, UPDATE),
        GROUP_NAME,
        (
            "virtualmachines/status",
            "virtualmachineinstancereplicasets/status",
            "virtualmachineinstancemigrations/status",
        ),
        "/status-validate",
    ),
)
# The pod eviction interceptors: core pods/eviction, narrowed by a CEL match condition on the pod name.
_EVICTIONS = (
    ("virt-launcher-eviction-interceptor.kubevirt.io", "only-vms", "virt-launcher"),
    ("hotplug-pod-eviction-interceptor.kubevirt.io", "only-hotplug-pods", "hp-volume-"),
)


def _client_config(namespace: str, path: str, ca_bundle: bytes | None) -> JSON:
    config: JSON = {"service": {"namespace": namespace, "name": VIRT_API_SERVICE, "path": path, "port": 443}}
    if ca_bundle is not None:
        config["caBundle"] = base64.b64encode(ca_bundle).decode()
    return config


def _webhook(
    name: str,
    operations: tuple[str, ...],
    group: str,
    resources: tuple[str, ...],
    path: str,
    namespace: str,
    ca: bytes | None,
) -> JSON:
    versions = ["v1alpha1"] if group == POOL_GROUP_NAME else list(WEBHOOK_VERSIONS)
    return {
        "name": name,
        "admissionReviewVersions": ["v1", "v1beta1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "rules": [
            {
                "operations": list(operations),
                "apiGroups": [group],
                "apiVersions": versions,
                "resources": list(resources),
                "scope": "*",
            }
        ],
        "clientConfig": _client_config(namespace, path, ca),
    }


def _eviction_webhook(name: str, condition: str, prefix: str, namespace: str, ca: bytes | None) -> JSON:
    return {
        "name": name,
        "admissionReviewVersions": ["v1", "v1beta1"],
        "sideEffects": "NoneOnDryRun",
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "rules": [
            {
                "operations": [CREATE],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods/eviction"],
                "scope": "*",
            }
        ],
        "matchConditions": [
            {"name": condition, "expression": f'object.metadata.name.startsWith("{prefix}")'}
        ],
        "clientConfig": _client_config(namespace, "/pod-eviction-validate", ca),
    }


def _configuration(kind: str, name: str, webhooks: list[JSON]) -> JSON:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "labels": {APP_LABEL: name},
            "annotations": {CERTIFICATE_SECRET_ANNOTATION: API_CERT_SECRET},
        },
        "webhooks": webhooks,
    }


def mutating_webhook_configuration(namespace: str, ca_bundle: bytes | None = None) -> JSON:
    hooks = [_webhook(*row, namespace, ca_bundle) for row in _MUTATING]
    return _configuration("MutatingWebhookConfiguration", MUTATOR, hooks)


def validating_webhook_configuration(namespace: str, ca_bundle: bytes | None = None) -> JSON:
    hooks = [_eviction_webhook(*row, namespace, ca_bundle) for row in _EVICTIONS]
    hooks += [_webhook(*row, namespace, ca_bundle) for row in _VALIDATING]
    return _configuration("ValidatingWebhookConfiguration", VALIDATOR, hooks)
