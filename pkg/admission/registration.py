"""virt-api's admission webhooks: KubeVirt's table (``components/webhooks.go``), one row per webhook.

virt-operator installs them (:mod:`kubevirt.virt_operator.resource.webhooks` adds where virt-api is reached
and how its certificate is trusted). The table holds only the webhooks whose path virt-api serves: a
webhook whose path answered 404 would fail every request it intercepts. Left out of KubeVirt's table for
that reason: the instance type and preference (namespaced and cluster) and migration policy validators.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubevirt_api.clone.v1beta1.types import CLONE_GROUP_NAME
from kubevirt_api.core.v1.constants import GROUP_NAME, POOL_GROUP_NAME
from kubevirt_api.export.v1beta1.types import EXPORT_GROUP_NAME
from kubevirt_api.snapshot.v1beta1.types import SNAPSHOT_GROUP_NAME
from kubevirt_api.view import JSON

# KubeVirt's ApiSupportedWebhookVersions of kubevirt.io.
KUBEVIRT_VERSIONS = ("v1alpha3", "v1")
MUTATOR_NAME = "virt-api-mutator"
VALIDATOR_NAME = "virt-api-validator"
ADMISSION_REVIEW_VERSIONS = ("v1", "v1beta1")
TIMEOUT_SECONDS = 10
# Every webhook of KubeVirt's fails closed, the eviction interceptors too.
FAILURE_POLICY = "Fail"


@dataclass(frozen=True)
class Hook:
    name: str
    path: str
    operations: tuple[str, ...]
    resources: tuple[str, ...]
    group: str = GROUP_NAME
    versions: tuple[str, ...] = KUBEVIRT_VERSIONS
    side_effects: str = "None"
    match_conditions: tuple[tuple[str, str], ...] = ()  # (name, CEL expression)


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
    Hook(
        "virtualmachineclones-mutator.kubevirt.io",
        "/vm-clone-mutate-create",
        ("CREATE",),
        ("virtualmachineclones",),
        group=CLONE_GROUP_NAME,
        versions=("v1beta1",),
    ),
)


def _eviction_hook(name: str, condition: str, prefix: str) -> Hook:
    """An interceptor of every eviction, narrowed by a CEL condition to the pods named ``prefix``..."""
    return Hook(
        name,
        "/pod-eviction-validate",
        ("*",),
        ("pods/eviction",),
        group="",
        versions=("v1",),
        side_effects="NoneOnDryRun",
        match_conditions=((condition, f'object.metadata.name.startsWith("{prefix}")'),),
    )


VALIDATING_HOOKS = (
    _eviction_hook("virt-launcher-eviction-interceptor.kubevirt.io", "only-vms", "virt-launcher"),
    _eviction_hook("hotplug-pod-eviction-interceptor.kubevirt.io", "only-hotplug-pods", "hp-volume-"),
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
        group=POOL_GROUP_NAME,
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
        "virtualmachinesnapshot-validator.snapshot.kubevirt.io",
        "/virtualmachinesnapshots-validate",
        ("CREATE", "UPDATE"),
        ("virtualmachinesnapshots",),
        group=SNAPSHOT_GROUP_NAME,
        versions=("v1beta1",),
    ),
    Hook(
        "virtualmachinerestore-validator.snapshot.kubevirt.io",
        "/virtualmachinerestores-validate",
        ("CREATE", "UPDATE"),
        ("virtualmachinerestores",),
        group=SNAPSHOT_GROUP_NAME,
        versions=("v1beta1",),
    ),
    Hook(
        "virtualmachineexport-validator.export.kubevirt.io",
        "/virtualmachineexports-validate",
        ("CREATE", "UPDATE"),
        ("virtualmachineexports",),
        group=EXPORT_GROUP_NAME,
        versions=("v1beta1",),
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
    Hook(
        "vm-clone-validator.kubevirt.io",
        "/vm-clone-validate-create",
        ("CREATE", "UPDATE"),
        ("virtualmachineclones",),
        group=CLONE_GROUP_NAME,
        versions=("v1beta1",),
    ),
)


def webhook(hook: Hook, client_config: JSON) -> JSON:
    """``hook``'s entry in its webhook configuration, calling virt-api at ``client_config``."""
    entry: JSON = {
        "name": hook.name,
        "admissionReviewVersions": list(ADMISSION_REVIEW_VERSIONS),
        "failurePolicy": FAILURE_POLICY,
        "sideEffects": hook.side_effects,
        "timeoutSeconds": TIMEOUT_SECONDS,
        "rules": [
            {
                "operations": list(hook.operations),
                "apiGroups": [hook.group],
                "apiVersions": list(hook.versions),
                "resources": list(hook.resources),
            }
        ],
        "clientConfig": client_config,
    }
    if hook.match_conditions:
        entry["matchConditions"] = [
            {"name": name, "expression": expression} for name, expression in hook.match_conditions
        ]
    return entry
