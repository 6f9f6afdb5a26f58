"""The tests in this folder share one KubeVirt, installed as its users install it (the release operator
manifest, then a KubeVirt CR) before the first of them and uninstalled after the last. Each test works in
a namespace of its own (the ``namespace`` fixture) and leaves the installation as it found it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from localcluster import install
from localcluster.handle import Cluster


@pytest.fixture(scope="package")
def kubevirt(cluster: Cluster) -> Iterator[float]:
    """KubeVirt Deployed on the cluster; yields the seconds the install took."""
    with install.installed(cluster) as deployed:
        yield deployed
