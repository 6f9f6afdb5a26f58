"""The cluster reaches a server in a pod through its Service, the way it must reach virt-api: the
apiserver's service proxy (/healthz), a validating webhook, and the subresources.kubevirt.io APIService.

virt-api does not serve subresources.kubevirt.io yet, so the pod runs a stand-in (reachability_server.py)
from the virt-api image with a command override; test_virt_api.py runs virt-api itself. Once virt-api
serves the subresource API, point these tests at it.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from localcluster import manifests
from localcluster.handle import Cluster
from localcluster.pki import serving_pair

NAME = "reachability"
# Per session: concurrent sessions share one cluster.
NAMESPACE = f"reachability-test-{os.getpid()}"
SERVER_SCRIPT = Path(__file__).with_name("reachability_server.py")
SERVER_COMMAND = ["/opt/kubevirt/bin/python", "/etc/reachability-server/server.py"]
APISERVICE = "v1.subresources.kubevirt.io"
WEBHOOK = NAMESPACE


@pytest.fixture(scope="module")
def server(cluster: Cluster) -> Iterator[bytes]:
    """The stand-in server behind Service reachability-test/reachability; yields its CA bundle."""
    ca, cert, key = serving_pair(f"{NAME}.{NAMESPACE}.svc")
    cluster.fresh_namespace(NAMESPACE)
    labels = {"app": NAME}
    container = manifests.https_container(
        "server",
        cluster.image("virt-api"),
        8443,
        {"tls": "/etc/reachability", "script": "/etc/reachability-server"},
    )
    container["command"] = SERVER_COMMAND
    volumes: list[dict[str, object]] = [
        {"name": "tls", "secret": {"secretName": NAME}},
        {"name": "script", "configMap": {"name": f"{NAME}-server"}},
    ]
    cluster.apply(
        manifests.tls_secret(NAME, NAMESPACE, cert, key),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{NAME}-server", "namespace": NAMESPACE},
            "data": {"server.py": SERVER_SCRIPT.read_text()},
        },
        manifests.deployment(NAME, NAMESPACE, labels, container, volumes),
        manifests.service(NAME, NAMESPACE, labels, 8443),
    )
    cluster.rollout(NAMESPACE, NAME)
    yield ca
    cluster.kubectl("delete", "validatingwebhookconfiguration", WEBHOOK, "--ignore-not-found", check=False)
    cluster.kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False)
    cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


def test_healthz_answers_through_the_service(cluster: Cluster, server: bytes) -> None:
    path = f"/api/v1/namespaces/{NAMESPACE}/services/https:{NAME}:443/proxy/healthz"
    assert cluster.kubectl("get", "--raw", path).stdout == "ok"


def test_validating_webhook_reaches_the_pod(cluster: Cluster, server: bytes) -> None:
    webhook = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK},
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
    cluster.apply(webhook)

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
    cluster.apply(
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

    cluster.wait_until("APIService Available", available)
    answer = json.loads(cluster.kubectl("get", "--raw", "/apis/subresources.kubevirt.io/v1/whoami").stdout)
    assert answer["user"] == "kubernetes-admin"


def test_pod_reaches_the_server_through_its_cluster_ip(cluster: Cluster, server: bytes) -> None:
    service = cluster.kubectl_json("get", "service", NAME, "-n", NAMESPACE)
    cluster_ip = service["spec"]["clusterIP"]  # type: ignore[index]
    # kube-proxy's rules carry a pod's connection to the Service's address over to the server's pod.
    # The serving certificate names the Service's DNS name, not its address: the address is checked here.
    # kube-proxy programs a new Service's endpoints a moment after the pod is ready (until then the
    # address refuses): the client tries for up to 30 s.
    script = (
        "import ssl, time, urllib.request; context = ssl._create_unverified_context()\n"
        "for attempt in range(30):\n"
        "    try:\n"
        f"        url = 'https://{cluster_ip}/healthz'\n"
        "        answer = urllib.request.urlopen(url, context=context, timeout=5)\n"
        "        break\n"
        "    except OSError:\n"
        "        if attempt == 29: raise\n"
        "        time.sleep(1)\n"
        "print(answer.read().decode())"
    )
    cluster.kubectl(
        "run", "client", "-n", NAMESPACE, f"--image={cluster.image('virt-api')}", "--image-pull-policy=Never",
        "--restart=Never", "--command", "--", "/opt/kubevirt/bin/python", "-c", script,
    )  # fmt: skip

    def finished() -> bool:
        status = cluster.kubectl_json("get", "pod", "client", "-n", NAMESPACE)["status"]
        return status.get("phase") in ("Succeeded", "Failed")  # type: ignore[union-attr]

    cluster.wait_until("client pod finished", finished)
    logs = cluster.kubectl("logs", "client", "-n", NAMESPACE).stdout
    assert logs.strip() == "ok", logs
