"""The webhook configurations virt-operator installs: KubeVirt's webhooks, limited to (and covering) the
paths virt-api serves."""

from __future__ import annotations

import base64
from typing import Any

from kubevirt.admission.pipeline import no_schema_check
from kubevirt.virt_api.webhooks.requests import WebhookContext
from kubevirt.virt_api.webhooks.routes import webhook_handlers
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_operator.resource.webhooks import (
    mutating_webhook_configuration,
    validating_webhook_configuration,
)

JSON = dict[str, Any]


def _paths(configuration: JSON) -> set[str]:
    return {hook["clientConfig"]["service"]["path"] for hook in configuration["webhooks"]}


def _by_name(configuration: JSON) -> dict[str, JSON]:
    return {hook["name"]: hook for hook in configuration["webhooks"]}


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


def test_kubevirts_webhooks_in_kubevirts_order() -> None:
    mutating = mutating_webhook_configuration("kubevirt")
    assert [hook["name"] for hook in mutating["webhooks"]] == [
        "virtualmachines-mutator.kubevirt.io",
        "virtualmachineinstances-mutator.kubevirt.io",
        "migrations-mutator.kubevirt.io",
        "virtualmachineclones-mutator.kubevirt.io",
    ]
    validating = validating_webhook_configuration("kubevirt")
    assert [hook["name"] for hook in validating["webhooks"]] == [
        "virt-launcher-eviction-interceptor.kubevirt.io",
        "hotplug-pod-eviction-interceptor.kubevirt.io",
        "virtualmachineinstances-create-validator.kubevirt.io",
        "virtualmachineinstances-update-validator.kubevirt.io",
        "virtualmachine-validator.kubevirt.io",
        "virtualmachinereplicaset-validator.kubevirt.io",
        "virtualmachinepool-validator.kubevirt.io",
        "virtualmachinepreset-validator.kubevirt.io",
        "migration-create-validator.kubevirt.io",
        "migration-update-validator.kubevirt.io",
        "virtualmachinesnapshot-validator.snapshot.kubevirt.io",
        "virtualmachinerestore-validator.snapshot.kubevirt.io",
        "virtualmachineexport-validator.export.kubevirt.io",
        "kubevirt-crd-status-validator.kubevirt.io",
        "vm-clone-validator.kubevirt.io",
    ]


def test_metadata_names_labels_and_the_certificate_secret() -> None:
    for configuration, name in (
        (mutating_webhook_configuration("kubevirt"), "virt-api-mutator"),
        (validating_webhook_configuration("kubevirt"), "virt-api-validator"),
    ):
        assert configuration["metadata"] == {
            "name": name,
            "labels": {"kubevirt.io": name, "app.kubernetes.io/managed-by": "virt-operator"},
            "annotations": {"certificates.kubevirt.io/secret": "kubevirt-virt-api-certs"},
        }


def test_kubevirt_settings() -> None:
    vmi_create = _by_name(validating_webhook_configuration("kubevirt", b"PEM"))[
        "virtualmachineinstances-create-validator.kubevirt.io"
    ]
    assert vmi_create["failurePolicy"] == "Fail"
    assert vmi_create["sideEffects"] == "None"
    assert vmi_create["timeoutSeconds"] == 10
    assert vmi_create["admissionReviewVersions"] == ["v1", "v1beta1"]
    assert "matchConditions" not in vmi_create
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
        "port": 443,
    }
    pool = _by_name(validating_webhook_configuration("kubevirt"))["virtualmachinepool-validator.kubevirt.io"]
    assert (pool["rules"][0]["apiGroups"], pool["rules"][0]["apiVersions"]) == (
        ["pool.kubevirt.io"],
        ["v1alpha1"],
    )


def test_without_a_ca_the_bundle_is_left_out() -> None:
    for configuration in (
        mutating_webhook_configuration("kubevirt"),
        validating_webhook_configuration("kubevirt"),
    ):
        assert all("caBundle" not in hook["clientConfig"] for hook in configuration["webhooks"])


def test_the_eviction_interceptors_are_kubevirts() -> None:
    by_name = _by_name(validating_webhook_configuration("kubevirt"))
    for name, condition, prefix in (
        ("virt-launcher-eviction-interceptor.kubevirt.io", "only-vms", "virt-launcher"),
        ("hotplug-pod-eviction-interceptor.kubevirt.io", "only-hotplug-pods", "hp-volume-"),
    ):
        hook = by_name[name]
        # KubeVirt fails evictions closed while virt-api is unreachable.
        assert (hook["failurePolicy"], hook["sideEffects"]) == ("Fail", "NoneOnDryRun")
        assert hook["rules"] == [
            {"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/eviction"]}
        ]
        assert hook["matchConditions"] == [
            {"name": condition, "expression": f'object.metadata.name.startsWith("{prefix}")'}
        ]
        assert hook["clientConfig"]["service"]["path"] == "/pod-eviction-validate"


def test_the_preset_validator_is_installed() -> None:
    hook = _by_name(validating_webhook_configuration("kubevirt"))[
        "virtualmachinepreset-validator.kubevirt.io"
    ]
    assert hook["rules"] == [
        {
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": ["kubevirt.io"],
            "apiVersions": ["v1alpha3", "v1"],
            "resources": ["virtualmachineinstancepresets"],
        }
    ]
    assert hook["clientConfig"]["service"]["path"] == "/vmipreset-validate"


def test_snapshot_and_restore_validators_match_kubevirts() -> None:
    by_name = _by_name(validating_webhook_configuration("kubevirt", b"PEM"))
    for name, resource, path in (
        (
            "virtualmachinesnapshot-validator.snapshot.kubevirt.io",
            "virtualmachinesnapshots",
            "/virtualmachinesnapshots-validate",
        ),
        (
            "virtualmachinerestore-validator.snapshot.kubevirt.io",
            "virtualmachinerestores",
            "/virtualmachinerestores-validate",
        ),
    ):
        hook = by_name[name]
        assert hook["rules"] == [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": ["snapshot.kubevirt.io"],
                "apiVersions": ["v1beta1"],
                "resources": [resource],
            }
        ]
        assert (hook["failurePolicy"], hook["sideEffects"]) == ("Fail", "None")
        assert hook["clientConfig"]["service"]["path"] == path


def test_the_export_validator_matches_kubevirts() -> None:
    hook = _by_name(validating_webhook_configuration("kubevirt", b"PEM"))[
        "virtualmachineexport-validator.export.kubevirt.io"
    ]
    assert hook["rules"] == [
        {
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": ["export.kubevirt.io"],
            "apiVersions": ["v1beta1"],
            "resources": ["virtualmachineexports"],
        }
    ]
    assert (hook["failurePolicy"], hook["sideEffects"], hook["timeoutSeconds"]) == ("Fail", "None", 10)
    assert hook["clientConfig"]["service"]["path"] == "/virtualmachineexports-validate"
