"""Every kind KubeVirt v1.6 serves can be listed: tools list them all, and a 404 for one breaks them.
A fresh namespace holds none of them; the cluster-scoped instance types and preferences are the
common-instancetypes bundle the operator installs."""

from __future__ import annotations

import pytest
from localcluster.handle import Cluster

# KubeVirt v1.6's CRDs, by resource and group (pkg/virt-operator/resource/generate/components/crds.go).
KUBEVIRT_KINDS = (
    "virtualmachines.kubevirt.io",
    "virtualmachineinstances.kubevirt.io",
    "virtualmachineinstancemigrations.kubevirt.io",
    "virtualmachineinstancereplicasets.kubevirt.io",
    "virtualmachineinstancepresets.kubevirt.io",
    "kubevirts.kubevirt.io",
    "virtualmachinepools.pool.kubevirt.io",
    "virtualmachinesnapshots.snapshot.kubevirt.io",
    "virtualmachinesnapshotcontents.snapshot.kubevirt.io",
    "virtualmachinerestores.snapshot.kubevirt.io",
    "virtualmachineexports.export.kubevirt.io",
    "virtualmachineclones.clone.kubevirt.io",
    "migrationpolicies.migrations.kubevirt.io",
    "virtualmachineinstancetypes.instancetype.kubevirt.io",
    "virtualmachineclusterinstancetypes.instancetype.kubevirt.io",
    "virtualmachinepreferences.instancetype.kubevirt.io",
    "virtualmachineclusterpreferences.instancetype.kubevirt.io",
)
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
