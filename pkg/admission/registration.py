"""The webhook configurations that route admission to virt-api (``components/webhooks.go``).

virt-operator installs these; they name exactly the paths virt-api serves, with KubeVirt's webhook names,
rules and settings (``failurePolicy: Fail`` but ``Ignore`` for the eviction interceptors, ``timeoutSeconds:
10``, review versions v1 and v1beta1).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from kubevirt_api.core.v1.constants import APP_LABEL, GROUP_NAME
from kubevirt_api.view import JSON

KUBEVIRT_VERSIONS = ["v1alpha3", "v1"]
MUTATOR_NAME = "virt-api-mutator"
VALIDATOR_NAME = "virt-api-validator"


@dataclass(frozen=True)
class Hook:
    name: str
    path: str
    operations: tuple[str, ...]
    resources: tuple[str, ...]
    group: str = GROUP_NAME
    versions: tuple[str, ...] = tuple(KUBEVIRT_VERSIONS)
    side_effects: str = "None"
    match_conditions: tuple[JSON, ...] = ()
    failure_policy: str = "Fail"


MUTATING_HOOKS = (
    Hook(
        "virtualmachines-mutator.kubevirt.io",
        "/virtualmachines-mutate",
        ("CREATE", "UPDATE"),
        ("virtualmachines",),
    ),
    Hook(
        "virtualmachineinstances-mutator.kubevirt.io",
        "/virtualmachineinstances-mutate",
        ("CREATE", "UPDATE"),
        ("virtualmachineinstances",),
    ),
    Hook(
        "migrations-mutator.kubevirt.io",
        "/migration-mutate-create",
        ("CREATE",),
        ("virtualmachineinstancemigrations",),
    ),
)


def _eviction_hook(name: str, prefix: str) -> Hook:
    condition = {"name": f"{prefix}-prefix", "expression": f'object.metadata.name.startsWith("{prefix}")'}
    return Hook(
        name,
        "/pod-eviction-validate",
        ("CREATE",),
        ("pods/eviction",),
        group="",
        versions=("v1",),
        side_effects="NoneOnDryRun",
        match_conditions=(condition,),
        # Every eviction in the cluster passes here: if virt-api is down, evictions go on (the launcher
        # pods' PodDisruptionBudgets still protect them).
        failure_policy="Ignore",
    )


VALIDATING_HOOKS = (
    _eviction_hook("virt-launcher-eviction-interceptor.kubevirt.io", "virt-launcher"),
    _eviction_hook("hotplug-pod-eviction-interceptor.kubevirt.io", "hp-volume-"),
    Hook(
        "virtualmachineinstances-create-validator.kubevirt.io",
        "/virtualmachineinstances-validate-create",
        ("CREATE",),
        ("virtualmachineinstances",),
    ),
    Hook(
        "virtualmachineinstances-update-validator.kubevirt.io",
        "/virtualmachineinstances-validate-update",
        ("UPDATE",),
        ("virtualmachineinstances",),
    ),
    Hook(
        "virtualmachine-validator.kubevirt.io",
        "/virtualmachines-validate",
        ("CREATE", "UPDATE"),
        ("virtualmachines",),
    ),
    Hook(
        "virtualmachinereplicaset-validator.kubevirt.io",
        "/virtualmachinereplicaset-validate",
        ("CREATE", "UPDATE"),
        ("virtualmachineinstancereplicasets",),
    ),
    Hook(
        "virtualmachinepool-validator.kubevirt.io",
        "/virtualmachinepool-validate",
        ("CREATE", "UPDATE"),
        ("virtualmachinepools",),
        group="pool.kubevirt.io",
        versions=("v1alpha1",),
    ),
    Hook(
        "virtualmachinepreset-validator.kubevirt.io",
        "/vmipreset-validate",
        ("CREATE", "UPDATE"),
        ("virtualmachineinstancepresets",),
    ),
    Hook(
        "migration-create-validator.kubevirt.io",
        "/migration-validate-create",
        ("CREATE",),
        ("virtualmachineinstancemigrations",),
    ),
    Hook(
        "migration-update-validator.kubevirt.io",
        "/migration-validate-update",
        ("UPDATE",),
        ("virtualmachineinstancemigrations",),
    ),
    Hook(
        "kubevirt-crd-status-validator.kubevirt.io",
        "/status-validate",
        ("CREATE", "UPDATE"),
        (
            "virtualmachines/status",
            "virtualmachineinstancereplicasets/status",
            "virtualmachineinstancemigrations/status",
        ),
    ),
)


def _webhook(hook: Hook, namespace: str, service: str, ca_bundle: bytes) -> JSON:
    webhook: JSON = {
        "name": hook.name,
        "admissionReviewVersions": ["v1", "v1beta1"],
        "failurePolicy": hook.failure_policy,
        "sideEffects": hook.side_effects,
        "timeoutSeconds": 10,
        "rules": [
            {
                "operations": list(hook.operations),
                "apiGroups": [hook.group],
                "apiVersions": list(hook.versions),
                "resources": list(hook.resources),
            }
        ],
        "clientConfig": {
            "service": {"namespace": namespace, "name": service, "path": hook.path},
            "caBundle": base64.b64encode(ca_bundle).decode(),
        },
    }
    if hook.match_conditions:
        webhook["matchConditions"] = [dict(c) for c in hook.match_conditions]
    return webhook


def _configuration(
    kind: str, name: str, hooks: tuple[Hook, ...], namespace: str, service: str, ca: bytes
) -> JSON:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "labels": {APP_LABEL: "virt-api"}},
        "webhooks": [_webhook(hook, namespace, service, ca) for hook in hooks],
    }


def mutating_webhook_configuration(namespace: str, ca_bundle: bytes, service: str = "virt-api") -> JSON:
    """``virt-api-mutator``; ``ca_bundle`` is the PEM of the CA that signed virt-api's certificate."""
    return _configuration(
        "MutatingWebhookConfiguration", MUTATOR_NAME, MUTATING_HOOKS, namespace, service, ca_bundle
    )


def validating_webhook_configuration(namespace: str, ca_bundle: bytes, service: str = "virt-api") -> JSON:
    """``virt-api-validator``, limited to the validating paths virt-api serves."""
    return _configuration(
        "ValidatingWebhookConfiguration", VALIDATOR_NAME, VALIDATING_HOOKS, namespace, service, ca_bundle
    )
