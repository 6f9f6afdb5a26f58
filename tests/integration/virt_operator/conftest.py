"""Each module here gets an API server of its own (uninstalling deletes CRDs that other modules'
servers rely on), with the operator manifest installed, and a client that is the operator's own
service account: the operator runs with exactly the RBAC its manifest grants it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from localcluster.apiserver import ApiServer, running_apiserver

from kubevirt.client import KubeClient
from kubevirt.client.connection import connect
from kubevirt.client.resources import SERVICE_ACCOUNTS
from kubevirt.virt_operator.app import POOL_SIZE
from kubevirt.virt_operator.resource.operator_rbac import OPERATOR_SERVICE_ACCOUNT
from kubevirt_testing.operator import NS, install_release


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with running_apiserver(tmp_path_factory.mktemp("operator-apiserver"), install_crds=False) as server:
        yield server


@pytest.fixture(scope="module")
def kube(apiserver: ApiServer) -> KubeClient:
    """The cluster admin, with the release manifest applied."""
    client = KubeClient(connect(str(apiserver.kubeconfig), pool_size=POOL_SIZE))
    install_release(client)
    return client


@pytest.fixture(scope="module")
def operator_kubeconfig(
    apiserver: ApiServer, kube: KubeClient, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A kubeconfig of the operator's service account (a TokenRequest token, as a pod would get)."""
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    path = SERVICE_ACCOUNTS.path(NS, OPERATOR_SERVICE_ACCOUNT, "token")
    token = json.loads(kube.request("POST", path, body=request))["status"]["token"]
    config = yaml.safe_load(Path(apiserver.kubeconfig).read_text())
    config["users"] = [{"name": "operator", "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = "operator"
    kubeconfig = tmp_path_factory.mktemp("operator-sa") / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    return kubeconfig


@pytest.fixture(scope="module")
def operator_kube(operator_kubeconfig: Path) -> KubeClient:
    """A client authenticated as the operator's service account."""
    client = KubeClient(connect(str(operator_kubeconfig), pool_size=POOL_SIZE), user_agent="virt-operator")
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    answer = json.loads(
        client.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=review)
    )
    assert (
        answer["status"]["userInfo"]["username"] == f"system:serviceaccount:{NS}:{OPERATOR_SERVICE_ACCOUNT}"
    )
    return client
