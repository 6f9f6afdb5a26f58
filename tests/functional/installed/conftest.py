"""The tests in this folder share one KubeVirt, installed as its users install it (the release operator
manifest, then a KubeVirt CR) before the first of them and uninstalled after the last. Each test works in
a namespace of its own (the ``namespace`` fixture) and leaves the installation as it found it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from localcluster import install
from localcluster import migration as mig
from localcluster.handle import Cluster


@pytest.fixture(scope="package")
def kubevirt(cluster: Cluster) -> Iterator[float]:
    """KubeVirt Deployed on the cluster; yields the seconds the install took."""
    with install.installed(cluster) as deployed:
        yield deployed


@pytest.fixture(scope="module")
def nodes(kubevirt: float, two_node_cluster: Cluster) -> tuple[str, str]:
    """Both node names once virt-handler marks each schedulable. KubeVirt is installed first (when this
    module installs it): its Deployments then stay on the first node, which outlives the second."""
    layout = two_node_cluster.layout
    names = (layout.node(1).name, layout.node(2).name)
    mig.poll(
        f"virt-handler marking {names} schedulable",
        lambda: set(names) <= set(mig.schedulable_nodes(two_node_cluster)),
        240.0,
        2.0,
    )
    return names
