"""A real kube-apiserver (with etcd, no node) for the API client tests, shared by the whole session.

It runs on loopback on free ports in a temporary directory, with the project's CRDs installed, and is
stopped when the session ends. The Kubernetes binaries come from hack/cluster/build-kubernetes's cache.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack" / "cluster"))

from localcluster.apiserver import ApiServer, running_apiserver

from kubevirt.client import KubeClient
from kubevirt.client.resources import NAMESPACES, SERVICE_ACCOUNTS


@pytest.fixture(scope="session")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with running_apiserver(tmp_path_factory.mktemp("apiserver")) as server:
        yield server


@pytest.fixture(scope="session")
def kube(apiserver: ApiServer) -> KubeClient:
    return KubeClient.from_kubeconfig(str(apiserver.kubeconfig))


@pytest.fixture
def namespace(kube: KubeClient) -> str:
    """A fresh namespace with the ``default`` service account pods need (no controller-manager makes it)."""
    name = f"test-{uuid.uuid4().hex[:8]}"
    kube.create(NAMESPACES, None, {"metadata": {"name": name}})
    kube.create(SERVICE_ACCOUNTS, name, {"metadata": {"name": "default"}})
    return name
