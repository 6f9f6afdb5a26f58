"""The cluster reaches a server in a pod through its Service, the way it must reach virt-api: the
apiserver's service proxy (/healthz), a validating webhook, and the subresources.kubevirt.io APIService.

virt-api does not serve yet, so the pod runs a stand-in (reachability_server.py) from the virt-api image
with a command override. Once virt-api serves /healthz and its webhooks, set SERVER_COMMAND to None to run
the image's own entrypoint instead.
"""

from __future__ import annotations

import base64
import datetime
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from localcluster.handle import Cluster

NAME = "reachability"
NAMESPACE = "reachability-test"
SERVER_SCRIPT = Path(__file__).with_name("reachability_server.py")
SERVER_COMMAND: list[str] | None = ["/opt/kubevirt/bin/python", "/etc/reachability-server/server.py"]
APISERVICE = "v1.subresources.kubevirt.io"


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _serving_certificate(dns_name: str) -> tuple[bytes, bytes, bytes]:
    """A throwaway CA and a serving certificate for ``dns_name``: (ca, cert, key) in PEM."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "reachability-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return _pem(ca), _pem(cert), key_pem


def _apply(cluster: Cluster, *objects: dict[str, object]) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))


def _deployment(image: str) -> dict[str, object]:
    container: dict[str, object] = {
        "name": "server",
        "image": image,
        "imagePullPolicy": "Never",
        "ports": [{"containerPort": 8443, "name": "https"}],
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": 8443, "scheme": "HTTPS"},
            "periodSeconds": 1,
        },
        "volumeMounts": [
            {"name": "tls", "mountPath": "/etc/reachability", "readOnly": True},
            {"name": "script", "mountPath": "/etc/reachability-server", "readOnly": True},
        ],
    }
    if SERVER_COMMAND:
        container["command"] = SERVER_COMMAND
    labels = {"app": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [container],
                    "volumes": [
                        {"name": "tls", "secret": {"secretName": NAME}},
                        {"name": "script", "configMap": {"name": f"{NAME}-server"}},
                    ],
                },
            },
        },
    }


def _wait(what: str, check: object, timeout: float = 90) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def server(cluster: Cluster) -> Iterator[bytes]:
    """The stand-in server behind Service reachability-test/reachability; yields its CA bundle."""
    ca, cert, key = _serving_certificate(f"{NAME}.{NAMESPACE}.svc")
    cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true")
    cluster.kubectl("create", "namespace", NAMESPACE)
    _wait(
        "default service account",
        lambda: cluster.kubectl("get", "sa", "default", "-n", NAMESPACE, check=False).returncode == 0,
    )
    _apply(
        cluster,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{NAME}-server", "namespace": NAMESPACE},
            "data": {"server.py": SERVER_SCRIPT.read_text()},
        },
        _deployment(cluster.image("virt-api")),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "spec": {
                "selector": {"app": NAME},
                "ports": [{"port": 443, "targetPort": 8443, "name": "https"}],
            },
        },
    )
    rollout = cluster.kubectl(
        "rollout", "status", f"deployment/{NAME}", "-n", NAMESPACE, "--timeout=120s", check=False
    )
    if rollout.returncode != 0:
        pods = cluster.kubectl("describe", "pods", "-n", NAMESPACE, check=False).stdout
        raise AssertionError(f"deployment not available: {rollout.stderr}\n{pods[-3000:]}")
    yield ca
    cluster.kubectl("delete", "validatingwebhookconfiguration", NAME, "--ignore-not-found", check=False)
    cluster.kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False)
    cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


def test_healthz_answers_through_the_service(cluster: Cluster, server: bytes) -> None:
    path = f"/api/v1/namespaces/{NAMESPACE}/services/https:{NAME}:443/proxy/healthz"
    assert cluster.kubectl("get", "--raw", path).stdout == "ok"


def test_validating_webhook_reaches_the_pod(cluster: Cluster, server: bytes) -> None:
    webhook = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": NAME},
        "webhooks": [
            {
                "name": "reachability.kubevirt.io",
                "clientConfig": {
                    "service": {"namespace": NAMESPACE, "name": NAME, "path": "/validate", "port": 443},
                    "caBundle": base64.b64encode(server).decode(),
                },
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["configmaps"],
                    }
                ],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}},
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 10,
            }
        ],
    }
    _apply(cluster, webhook)

    def config_map(name: str, labels: dict[str, str]) -> str:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}
        return json.dumps(body)

    denied = cluster.kubectl(
        "create",
        "-n",
        NAMESPACE,
        "-f",
        "-",
        stdin=config_map("denied", {"reachability/deny": "yes"}),
        check=False,
    )
    assert denied.returncode != 0
    assert "denied by the reachability webhook" in denied.stderr
    cluster.kubectl("create", "-n", NAMESPACE, "-f", "-", stdin=config_map("allowed", {}))


def test_apiservice_reaches_the_pod_with_front_proxy_identity(cluster: Cluster, server: bytes) -> None:
    _apply(
        cluster,
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": APISERVICE},
            "spec": {
                "group": "subresources.kubevirt.io",
                "version": "v1",
                "service": {"namespace": NAMESPACE, "name": NAME, "port": 443},
                "caBundle": base64.b64encode(server).decode(),
                "groupPriorityMinimum": 1000,
                "versionPriority": 15,
            },
        },
    )

    def available() -> bool:
        conditions = cluster.kubectl_json("get", "apiservice", APISERVICE)["status"].get("conditions", [])
        return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)

    _wait("APIService Available", available)
    answer = json.loads(cluster.kubectl("get", "--raw", "/apis/subresources.kubevirt.io/v1/whoami").stdout)
    assert answer["user"] == "kubernetes-admin"
