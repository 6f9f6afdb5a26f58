"""The common instance types and preferences bundle against the CRDs in a real kube-apiserver."""

from __future__ import annotations

from kubevirt.client import KubeClient
from kubevirt.client.resources import INSTANCETYPE_RESOURCES
from kubevirt.virt_operator.resource.common_instancetypes import bundle_for


def test_the_api_server_accepts_every_object_of_the_bundle(kube: KubeClient) -> None:
    bundle = bundle_for({})
    created = []
    try:
        for obj in bundle:
            resource = INSTANCETYPE_RESOURCES[obj["kind"]]
            created.append((resource, kube.create(resource, None, obj)))
        for resource, obj in created:
            # Stored as given: no field was pruned by the CRD's structural schema.
            stored = kube.get(resource, None, obj["metadata"]["name"])
            original = next(
                o
                for o in bundle
                if o["metadata"]["name"] == obj["metadata"]["name"] and o["kind"] == obj["kind"]
            )
            assert stored["spec"] == original["spec"]
    finally:
        for resource, obj in created:
            kube.delete(resource, None, obj["metadata"]["name"])
    assert len(created) == len(bundle)
