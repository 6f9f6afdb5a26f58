"""cdi-controller's wiring of the upload controller: its queue exists only with an upload server image,
and claims, upload server pods and their Services lead to it (importer pods to the import queue)."""

from __future__ import annotations

from typing import Any, cast

from kubevirt.cdi_controller.app import Controllers, Options
from kubevirt.client import KubeClient
from kubevirt_testing.fake_kube_api import FakeKubeApi

A = "cdi.kubevirt.io/"


def controllers(uploadserver_image: str = "") -> Controllers:
    options = Options(importer_image="importer:v1", uploadserver_image=uploadserver_image)
    return Controllers(cast(KubeClient, FakeKubeApi()), options, watch_snapshot_classes=False)


def owned_pod(name: str, **metadata: Any) -> dict[str, Any]:
    ref = {"kind": "PersistentVolumeClaim", "name": "disk", "controller": True, "uid": "u1"}
    return {"metadata": {"name": name, "namespace": "ns", "ownerReferences": [ref], **metadata}}


def test_no_upload_image_no_upload_controller() -> None:
    running = controllers()
    assert "upload" not in running.queues
    assert "upload" not in running.reconcilers
    running._claim_changed({"metadata": {"name": "disk", "namespace": "ns"}})
    assert len(running.queues["import"]) == 1


def test_upload_pods_services_and_claims_queue_the_upload_controller() -> None:
    running = controllers("uploadserver:v1")
    assert "upload" in running.reconcilers
    upload_pod = owned_pod("cdi-upload-disk", labels={A + "uploadTarget": "u1"})
    running._pod_changed(upload_pod)
    assert (len(running.queues["upload"]), len(running.queues["import"])) == (1, 0)
    assert running.queues["upload"].get() == "ns/disk"
    running._pod_changed(owned_pod("importer-disk"))
    assert len(running.queues["import"]) == 1
    running._claim_changed({"metadata": {"name": "other", "namespace": "ns"}})
    assert running.queues["upload"].get() == "ns/other"
