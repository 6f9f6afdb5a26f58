"""inferFromVolume with virt-api's cluster state reading a PVC from a real kube-apiserver."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.admission.instancetypes import infer_from_volumes
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, KubeClient
from kubevirt.instancetype.infer import InferenceError
from kubevirt.virt_api.cluster import KubernetesClusterState


def _vm(claim: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "vm"},
        "spec": {
            "instancetype": {"inferFromVolume": "root"},
            "preference": {"inferFromVolume": "root", "inferFromVolumeFailurePolicy": "Ignore"},
            "template": {
                "spec": {
                    "domain": {},
                    "volumes": [{"name": "root", "persistentVolumeClaim": {"claimName": claim}}],
                }
            },
        },
    }


def test_the_pvcs_labels_name_the_instancetype(kube: KubeClient, namespace: str) -> None:
    kube.create(
        PERSISTENT_VOLUME_CLAIMS,
        namespace,
        {
            "metadata": {
                "name": "fedora-disk",
                "labels": {
                    "instancetype.kubevirt.io/default-instancetype": "u1.medium",
                    "instancetype.kubevirt.io/default-instancetype-kind": "VirtualMachineClusterInstancetype",
                },
            },
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    )
    state = KubernetesClusterState(kube)
    vm = _vm("fedora-disk")
    infer_from_volumes(vm, state, namespace)
    assert vm["spec"]["instancetype"] == {"name": "u1.medium", "kind": "VirtualMachineClusterInstancetype"}
    # No preference label: the Ignore policy clears that matcher.
    assert "preference" not in vm["spec"]

    with pytest.raises(InferenceError) as caught:
        infer_from_volumes(_vm("absent"), state, namespace)
    assert caught.value.message == 'persistentvolumeclaims "absent" not found'
