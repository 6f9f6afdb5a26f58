"""virt-api behind the real API server's aggregator (``kubevirt_testing.aggregated``), shared by the
tests of this folder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from localcluster.apiserver import ApiServer

from kubevirt.client import KubeClient
from kubevirt_testing.aggregated import AggregatedVirtApi, running_aggregated_virt_api


@pytest.fixture(scope="session")
def aggregated_virt_api(
    apiserver: ApiServer, kube: KubeClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AggregatedVirtApi]:
    del kube  # the API server must be up; the helper makes its own client
    workdir = tmp_path_factory.mktemp("aggregated-virt-api")
    with running_aggregated_virt_api(apiserver.kubeconfig, apiserver.directory / "pki", workdir) as api:
        yield api
