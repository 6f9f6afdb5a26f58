"""Each module here gets an API server of its own: uninstalling deletes CRDs that other modules'
servers rely on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from localcluster.apiserver import running_apiserver

from kubevirt.client import KubeClient
from kubevirt.client.connection import connect
from kubevirt.virt_operator.app import POOL_SIZE
from kubevirt_testing.operator import install_release


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeClient]:
    with running_apiserver(tmp_path_factory.mktemp("operator-apiserver"), install_crds=False) as server:
        client = KubeClient(connect(str(server.kubeconfig), pool_size=POOL_SIZE))
        install_release(client)
        yield client
