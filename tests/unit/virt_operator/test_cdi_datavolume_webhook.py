"""CDI's DataVolume mutating webhook as virt-operator installs it under the ``DataImporter`` gate: CDI's
``cdi-api-datavolume-mutate`` calling cdi-apiserver's ``/datavolume-mutate`` through ``cdi-api``, trusting
cdi-apiserver's signer bundle, and gone with the gate or the install."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kubevirt.client import KUBEVIRTS
from kubevirt.client.resources import CLUSTER_ROLES, CONFIG_MAPS, MUTATING_WEBHOOKS
from kubevirt.virt_operator.resource import cdi_upload
from kubevirt.virt_operator.resource.operator_rbac import operator_rbac

from .test_cdi_upload import _installed
from .test_data_importer import GATE, CdiHarness, _with_gate

JSON = dict[str, Any]
NAME = "cdi-api-datavolume-mutate"


@pytest.fixture
def harness() -> CdiHarness:
    return CdiHarness()


def test_the_webhook_sends_datavolume_writes_to_cdi_apiserver() -> None:
    configuration = _installed([GATE])[("MutatingWebhookConfiguration", NAME)]
    assert configuration["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert configuration["metadata"]["labels"]["cdi.kubevirt.io"] == "cdi-api"
    (webhook,) = configuration["webhooks"]
    assert webhook == {
        "name": "datavolume-mutate.cdi.kubevirt.io",
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": ["cdi.kubevirt.io"],
                "apiVersions": ["v1beta1"],
                "resources": ["datavolumes"],
                "scope": "*",
            }
        ],
        "clientConfig": {
            "service": {"namespace": "cdi", "name": "cdi-api", "path": "/datavolume-mutate", "port": 443},
            "caBundle": base64.b64encode(b"CDI-CA").decode(),
        },
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "matchPolicy": "Exact",
        "namespaceSelector": {},
        "objectSelector": {},
        "timeoutSeconds": 30,
        "admissionReviewVersions": ["v1", "v1beta1"],
        "reinvocationPolicy": "Never",
    }


def test_without_a_signer_no_bundle_is_claimed_and_without_the_gate_no_webhook() -> None:
    unsigned = _installed([GATE], bundle=None)[("MutatingWebhookConfiguration", NAME)]
    assert "caBundle" not in unsigned["webhooks"][0]["clientConfig"]
    assert ("MutatingWebhookConfiguration", NAME) not in _installed([])


def test_cdi_apiserver_may_review_access_and_read_clone_sources() -> None:
    rules = _installed([GATE])[("ClusterRole", "cdi-apiserver")]["rules"]
    for group, resource, verb in (
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
        ("", "namespaces", "get"),
        ("cdi.kubevirt.io", "datasources", "get"),
    ):
        assert any(
            group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]
            for rule in rules
        ), resource
    # The operator holds what it grants.
    (operator_role,) = [obj for obj in operator_rbac("kubevirt") if obj["kind"] == "ClusterRole"]
    assert any(
        "cdi.kubevirt.io" in rule["apiGroups"]
        and "datasources" in rule["resources"]
        and "get" in rule["verbs"]
        for rule in operator_role["rules"]
    )


def test_the_installed_webhook_trusts_the_published_apiserver_signer_bundle(harness: CdiHarness) -> None:
    _with_gate(harness)
    configuration = harness.api.get(MUTATING_WEBHOOKS, None, NAME)
    bundle = harness.api.get(CONFIG_MAPS, "cdi", "cdi-apiserver-signer-bundle")["data"]["ca-bundle.crt"]
    (webhook,) = configuration["webhooks"]
    assert base64.b64decode(webhook["clientConfig"]["caBundle"]).decode() == bundle
    assert webhook["clientConfig"]["service"]["path"] == cdi_upload.DATAVOLUME_MUTATE_PATH


def test_turning_the_gate_off_removes_the_webhook(harness: CdiHarness) -> None:
    _with_gate(harness)
    assert NAME in harness.names(MUTATING_WEBHOOKS)
    harness.gates()
    harness.sync()
    assert NAME not in harness.names(MUTATING_WEBHOOKS)
    assert "cdi-apiserver" not in harness.names(CLUSTER_ROLES)


def test_uninstalling_removes_the_webhook(harness: CdiHarness) -> None:
    _with_gate(harness)
    kv = harness.kubevirt()
    kv["metadata"]["deletionTimestamp"] = "2026-06-01T00:00:00Z"
    harness.api.objects[(KUBEVIRTS.plural, "kubevirt", "kubevirt")] = kv
    for _ in range(3):
        harness.sync()
    assert harness.kubevirt()["status"]["phase"] == "Deleted"
    assert harness.api.objects_of(MUTATING_WEBHOOKS) == []
