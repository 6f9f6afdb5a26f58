"""Every kind KubeVirt v1.6 serves can be listed: tools list them all, and a 404 for one breaks them."""

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


@pytest.mark.parametrize("resource", KUBEVIRT_KINDS)
def test_every_kubevirt_kind_lists(cluster: Cluster, kubevirt: float, namespace: str, resource: str) -> None:
    listed = cluster.kubectl("get", resource, "-n", namespace, "-o", "json", check=False)
    assert listed.returncode == 0, f"kubectl get {resource}: {listed.stderr.strip()}"
    assert cluster.kubectl_json("get", resource, "-n", namespace)["items"] == []
