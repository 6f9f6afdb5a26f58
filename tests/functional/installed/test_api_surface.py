"""Every kind KubeVirt v1.6 serves can be listed: tools list them all, and a 404 for one breaks them.
A fresh namespace holds none of them; the cluster-scoped instance types and preferences are the
common-instancetypes bundle the operator installs."""

from __future__ import annotations

import pytest
from localcluster.handle import Cluster

from kubevirt_api.crd import CRDS

# Every CRD we install (tests/unit/api/test_crds.py pins this set to KubeVirt v1.6's), by resource and group.
KUBEVIRT_KINDS = sorted(facts.name for facts in CRDS.values())
OPERATOR_BUNDLE = (
    "virtualmachineclusterinstancetypes.instancetype.kubevirt.io",
    "virtualmachineclusterpreferences.instancetype.kubevirt.io",
)


@pytest.mark.parametrize("resource", KUBEVIRT_KINDS)
def test_every_kubevirt_kind_lists(cluster: Cluster, kubevirt: float, namespace: str, resource: str) -> None:
    listed = cluster.kubectl("get", resource, "-n", namespace, "-o", "json", check=False)
    assert listed.returncode == 0, f"kubectl get {resource}: {listed.stderr.strip()}"
    items = cluster.kubectl_json("get", resource, "-n", namespace)["items"]
    assert isinstance(items, list)
    if resource in OPERATOR_BUNDLE:
        assert items, f"{resource}: the common-instancetypes bundle is missing"
        vendors = {item["metadata"]["labels"].get("instancetype.kubevirt.io/vendor") for item in items}
        assert "kubevirt.io" in vendors
    else:
        assert items == []
