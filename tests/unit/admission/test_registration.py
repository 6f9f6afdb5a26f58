"""The webhook configurations name exactly the paths virt-api serves."""

from __future__ import annotations

import base64

from kubevirt.admission.pipeline import no_schema_check
from kubevirt.admission.registration import mutating_webhook_configuration, validating_webhook_configuration
from kubevirt.virt_api.webhooks.requests import WebhookContext
from kubevirt.virt_api.webhooks.routes import webhook_handlers
from kubevirt.virt_config import ClusterConfig


def _paths(configuration: dict[str, object]) -> set[str]:
    hooks = configuration["webhooks"]
    assert isinstance(hooks, list)
    return {hook["clientConfig"]["service"]["path"] for hook in hooks}


def test_every_registered_path_is_served_and_every_served_path_registered() -> None:
    ctx = WebhookContext(
        config=ClusterConfig(),
        vmi_defaulter=lambda *_: None,
        vm_defaulter=lambda *_: None,
        schema=no_schema_check,
    )
    served = set(webhook_handlers(ctx))
    mutating = mutating_webhook_configuration("kubevirt", b"CA")
    validating = validating_webhook_configuration("kubevirt", b"CA")
    assert _paths(mutating) | _paths(validating) == served
    assert _paths(mutating) == {p for p in served if "mutate" in p}


def test_kubevirt_settings() -> None:
    validating = validating_webhook_configuration("kubevirt", b"PEM")
    assert validating["metadata"]["name"] == "virt-api-validator"
    by_name = {hook["name"]: hook for hook in validating["webhooks"]}
    vmi_create = by_name["virtualmachineinstances-create-validator.kubevirt.io"]
    assert vmi_create["failurePolicy"] == "Fail"
    assert vmi_create["timeoutSeconds"] == 10
    assert vmi_create["admissionReviewVersions"] == ["v1", "v1beta1"]
    assert vmi_create["rules"] == [
        {
            "operations": ["CREATE"],
            "apiGroups": ["kubevirt.io"],
            "apiVersions": ["v1alpha3", "v1"],
            "resources": ["virtualmachineinstances"],
        }
    ]
    assert base64.b64decode(vmi_create["clientConfig"]["caBundle"]) == b"PEM"
    assert vmi_create["clientConfig"]["service"] == {
        "namespace": "kubevirt",
        "name": "virt-api",
        "path": "/virtualmachineinstances-validate-create",
    }
    eviction = by_name["virt-launcher-eviction-interceptor.kubevirt.io"]
    assert eviction["sideEffects"] == "NoneOnDryRun"
    assert eviction["failurePolicy"] == "Ignore"
    assert eviction["rules"][0]["resources"] == ["pods/eviction"]
    assert 'startsWith("virt-launcher")' in eviction["matchConditions"][0]["expression"]
    pool = by_name["virtualmachinepool-validator.kubevirt.io"]
    assert pool["rules"][0]["apiGroups"] == ["pool.kubevirt.io"]
