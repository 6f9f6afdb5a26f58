"""virt-api itself in the cluster: a Deployment of the virt-api image with its own entrypoint answers
/healthz through its Service, and the apiserver calls its VMI admission webhook through that Service and
returns KubeVirt's causes (the same ones ``virtctl validate`` computes locally)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from localcluster import manifests
from localcluster.handle import Cluster
from localcluster.pki import serving_pair
from localcluster.vmis import INVALID_VMI_CAUSE, invalid_vmi, invalid_vmi_refusal

# Per session: concurrent sessions share one cluster.
NAMESPACE = f"virt-api-test-{os.getpid()}"
NAME = "virt-api"
CERT_DIR = "/etc/virt-api/certificates"
WEBHOOK = f"{NAMESPACE}-validator"
VMI_VALIDATE_CREATE = "/virtualmachineinstances-validate-create"


def _virt_api_objects(image: str, cert: bytes, key: bytes) -> list[dict[str, object]]:
    labels = {"kubevirt.io": "virt-api"}
    container = manifests.https_container("virt-api", image, 8443, {"certificates": CERT_DIR})
    container["args"] = [
        "--port=8443",
        f"--tls-cert-file={CERT_DIR}/tls.crt",
        f"--tls-key-file={CERT_DIR}/tls.key",
    ]
    volumes: list[dict[str, object]] = [{"name": "certificates", "secret": {"secretName": NAME}}]
    return [
        manifests.tls_secret(NAME, NAMESPACE, cert, key),
        manifests.deployment(NAME, NAMESPACE, labels, container, volumes),
        manifests.service(NAME, NAMESPACE, labels, 8443),
    ]


@pytest.fixture(scope="module")
def virt_api(cluster: Cluster) -> Iterator[bytes]:
    """virt-api running behind Service virt-api-test/virt-api; yields the CA bundle of its certificate."""
    ca, cert, key = serving_pair(f"{NAME}.{NAMESPACE}.svc")
    cluster.fresh_namespace(NAMESPACE)
    cluster.apply(*_virt_api_objects(cluster.image("virt-api"), cert, key))
    cluster.rollout(NAMESPACE, NAME)
    yield ca
    cluster.kubectl("delete", "validatingwebhookconfiguration", WEBHOOK, "--ignore-not-found", check=False)
    cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


def test_virt_api_answers_healthz_through_its_service(cluster: Cluster, virt_api: bytes) -> None:
    path = f"/api/v1/namespaces/{NAMESPACE}/services/https:{NAME}:443/proxy/healthz"
    health = json.loads(cluster.kubectl("get", "--raw", path).stdout)
    # KubeVirt's health answer: virt-api reached the apiserver from its pod (service account, Service IP).
    assert health["apiserver"]["connectivity"] == "ok"
    assert health["apiserver"]["version"]["gitVersion"] == cluster.layout.kubernetes_version


def _expected_causes(manifest: Path) -> list[dict[str, str]]:
    virtctl = Path(sys.executable).with_name("virtctl")
    result = subprocess.run([str(virtctl), "validate", "-f", str(manifest)], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    causes = json.loads(result.stdout)
    assert causes
    return list(causes)


def test_apiserver_calls_virt_api_vmi_webhook(
    cluster: Cluster, crds: list[str], virt_api: bytes, tmp_path: Path
) -> None:
    cluster.apply(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": WEBHOOK},
            "webhooks": [
                {
                    "name": "virtualmachineinstances-create-validator.kubevirt.io",
                    "clientConfig": {
                        "service": {
                            "namespace": NAMESPACE,
                            "name": NAME,
                            "path": VMI_VALIDATE_CREATE,
                            "port": 443,
                        },
                        "caBundle": base64.b64encode(virt_api).decode(),
                    },
                    "rules": [
                        {
                            "apiGroups": ["kubevirt.io"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["virtualmachineinstances"],
                        }
                    ],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}},
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
            ],
        }
    )
    manifest = tmp_path / "vmi.json"
    manifest.write_text(json.dumps(invalid_vmi(NAMESPACE)))
    denied = invalid_vmi_refusal(cluster, NAMESPACE)
    assert INVALID_VMI_CAUSE in denied
    for cause in _expected_causes(manifest):
        assert cause["message"] in denied
