"""cdi-controller against a real kube-apiserver with the project's cdi.kubevirt.io CRDs (no node, no PV
controller: the test binds the claim and plays the kubelet). A DataVolume yields its claim with CDI's
annotations, the StorageProfile and CDIConfig the claim was rendered from, then the importer pod; once
the pod reports success the DataVolume is Succeeded at 100.0%."""

from __future__ import annotations

import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster.apiserver import running_apiserver  # noqa: E402

from kubevirt.cdi.resources import STORAGE_PROFILES  # noqa: E402
from kubevirt.cdi_controller.app import Controllers, Options  # noqa: E402
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS, KubeClient, NotFoundError  # noqa: E402
from kubevirt.client.resources import (  # noqa: E402
    CDI_CONFIGS,
    DATA_VOLUMES,
    NAMESPACES,
    SERVICE_ACCOUNTS,
    STORAGE_CLASSES,
)
from kubevirt_testing.waiting import eventually  # noqa: E402

A = "cdi.kubevirt.io/"


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeClient]:
    # An API server of its own: KubeVirt's components on the session's must not see a DataVolume CRD.
    with running_apiserver(tmp_path_factory.mktemp("cdi-controller"), install_crds=False) as server:
        server.kubectl("apply", "--server-side", "-f", str(REPO / "manifests" / "cdi"))
        server.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        yield KubeClient.from_kubeconfig(str(server.kubeconfig))


@pytest.fixture
def controllers(kube: KubeClient) -> Iterator[Controllers]:
    kube.create(
        STORAGE_CLASSES,
        None,
        {
            "metadata": {
                "name": "local",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "hostpath.csi.kubevirt-py.io",
            "volumeBindingMode": "Immediate",
        },
    )
    options = Options(importer_image="cdi-importer:test", threads=1, cache_sync_timeout=20)
    running = Controllers(kube, options, watch_snapshot_classes=False)
    stop = threading.Event()
    thread = threading.Thread(target=running.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield running
    finally:
        stop.set()
        thread.join(15)
        running.stop()


def _get(kube: KubeClient, resource: Any, namespace: str | None, name: str) -> dict[str, Any] | None:
    try:
        return kube.get(resource, namespace, name)
    except NotFoundError:
        return None


def test_http_data_volume_is_imported(kube: KubeClient, controllers: Controllers) -> None:
    namespace = f"cdi-{uuid.uuid4().hex[:8]}"
    kube.create(NAMESPACES, None, {"metadata": {"name": namespace}})
    kube.create(
        SERVICE_ACCOUNTS, namespace, {"metadata": {"name": "default"}}
    )  # no controller-manager makes it
    dv = kube.create(
        DATA_VOLUMES,
        namespace,
        {
            "apiVersion": "cdi.kubevirt.io/v1beta1",
            "kind": "DataVolume",
            "metadata": {"name": "disk"},
            "spec": {
                "source": {"http": {"url": "https://images.example/disk.img.gz", "certConfigMap": "ca"}},
                "storage": {"resources": {"requests": {"storage": "64Mi"}}},
            },
        },
    )
    eventually(lambda: _get(kube, PERSISTENT_VOLUME_CLAIMS, namespace, "disk") is not None, timeout=30)
    pvc = kube.get(PERSISTENT_VOLUME_CLAIMS, namespace, "disk")
    annotations = pvc["metadata"]["annotations"]
    assert annotations[A + "storage.import.endpoint"] == "https://images.example/disk.img.gz"
    assert annotations[A + "storage.import.source"] == "http"
    assert annotations[A + "storage.import.certConfigMap"] == "ca"
    assert annotations[A + "storage.usePopulator"] == "false"
    assert annotations[A + "createdForDataVolume"] == dv["metadata"]["uid"]
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]  # from the StorageProfile
    assert pvc["spec"]["resources"]["requests"]["storage"] == str(int(64 * (1 << 20) * 1.06) + 1)
    assert kube.get(STORAGE_PROFILES, None, "local")["status"]["provisioner"] == "hostpath.csi.kubevirt-py.io"
    assert kube.get(CDI_CONFIGS, None, "config")["status"]["filesystemOverhead"]["global"] == "0.06"

    # The PV controller's part: the claim binds.
    kube.patch(
        PERSISTENT_VOLUME_CLAIMS,
        namespace,
        "disk",
        {"status": {"phase": "Bound"}},
        patch_type="merge",
        subresource="status",
    )
    eventually(lambda: _get(kube, PODS, namespace, "importer-disk") is not None, timeout=30)
    pod = kube.get(PODS, namespace, "importer-disk")
    assert pod["spec"]["containers"][0]["image"] == "cdi-importer:test"
    eventually(lambda: _phase(kube, namespace) == "ImportScheduled", timeout=30)

    # The kubelet's part: the importer ran and left its termination message.
    status = {
        "phase": "Succeeded",
        "containerStatuses": [
            {
                "name": "importer",
                "image": "cdi-importer:test",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "message": '{"message":"Import Complete"}',
                    }
                },
            }
        ],
    }
    kube.patch(PODS, namespace, "importer-disk", {"status": status}, patch_type="merge", subresource="status")
    eventually(lambda: _phase(kube, namespace) == "Succeeded", timeout=30)
    final = kube.get(DATA_VOLUMES, namespace, "disk")["status"]
    assert final["progress"] == "100.0%"
    assert {c["type"]: c["status"] for c in final["conditions"]} == {
        "Bound": "True",
        "Ready": "True",
        "Running": "False",
    }
    annotations = kube.get(PERSISTENT_VOLUME_CLAIMS, namespace, "disk")["metadata"]["annotations"]
    assert annotations[A + "storage.pod.phase"] == "Succeeded"
    eventually(lambda: _get(kube, PODS, namespace, "importer-disk") is None, timeout=30)


def _phase(kube: KubeClient, namespace: str) -> str:
    return str((kube.get(DATA_VOLUMES, namespace, "disk").get("status") or {}).get("phase", ""))
