"""The import controller: the importer pod's shape, when a claim is taken, the pod's state on the claim,
success and failure, the scratch-space restart and a claim in use."""

from __future__ import annotations

from typing import Any

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS
from kubevirt.client.resources import DATA_VOLUMES

from .harness import (
    IMAGE,
    Cluster,
    data_volume,
    running,
    set_claim_phase,
    set_pod_status,
    standard_cluster,
    terminated,
)

A = "cdi.kubevirt.io/"


def env_of(pod: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][0]["env"]}


def imported(cluster: Cluster, dv: dict[str, Any], *, bind: bool = True) -> dict[str, Any]:
    cluster.add(DATA_VOLUMES, dv)
    cluster.settle("dv")
    if bind:
        set_claim_phase(cluster, "dv", "Bound")
        cluster.settle("dv")
    return cluster.get(PODS, "importer-dv")


def test_importer_pod_shape_for_an_http_source() -> None:
    cluster = standard_cluster()
    dv = data_volume()
    dv["spec"]["source"]["http"].update(
        secretRef="creds", certConfigMap="ca", extraHeaders=["X-A: 1"], secretExtraHeaders=["hdrs"]
    )
    pod = imported(cluster, dv)
    pvc = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")
    dv_uid = cluster.get(DATA_VOLUMES, "dv")["metadata"]["uid"]
    assert pvc["metadata"]["annotations"][A + "storage.import.importPodName"] == "importer-dv"
    assert pod["metadata"]["labels"]["cdi.kubevirt.io"] == "importer"
    assert pod["metadata"]["labels"]["prometheus.cdi.kubevirt.io"] == "true"
    assert pod["metadata"]["annotations"][A + "storage.createdByController"] == "yes"
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("PersistentVolumeClaim", "dv", True)
    spec = pod["spec"]
    assert spec["restartPolicy"] == "OnFailure"
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}, "fsGroup": 107}
    container = spec["containers"][0]
    assert container["name"] == "importer"
    assert container["image"] == IMAGE
    assert container["securityContext"]["runAsUser"] == 107
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["ports"] == [{"name": "metrics", "containerPort": 8443, "protocol": "TCP"}]
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert container["volumeMounts"] == [
        {"name": "cdi-data-vol", "mountPath": "/data"},
        {"name": "cdi-cert-vol", "mountPath": "/certs"},
        {"name": "cdi-secret-extra-headers-vol-0", "mountPath": "/extraheaders/0"},
    ]
    assert {"name": "cdi-secret-extra-headers-vol-0", "secret": {"secretName": "hdrs"}} in spec["volumes"]
    env = env_of(pod)
    assert env["IMPORTER_SOURCE"] == "http"
    assert env["IMPORTER_ENDPOINT"] == "https://images.example/disk.qcow2"
    assert env["IMPORTER_CONTENTTYPE"] == "kubevirt"
    assert env["IMPORTER_IMAGE_SIZE"] == "1138166334"
    assert env["OWNER_UID"] == dv_uid
    assert env["FILESYSTEM_OVERHEAD"] == "0.06"
    assert env["INSECURE_TLS"] == "false"
    assert env["IMPORTER_CERT_DIR"] == "/certs"
    assert env["IMPORTER_EXTRA_HEADER_0"] == "X-A: 1"
    assert env["IMPORTER_ACCESS_KEY_ID"] == {"secretKeyRef": {"name": "creds", "key": "accessKeyId"}}
    assert env["IMPORTER_SECRET_KEY"] == {"secretKeyRef": {"name": "creds", "key": "secretKey"}}
    assert container["resources"] == {"limits": {"cpu": "750m", "memory": "600M"}}


def test_a_node_pull_runs_the_image_beside_the_importer_and_needs_no_scratch_up_front() -> None:
    cluster = standard_cluster()
    dv = data_volume(source={"registry": {"url": "docker://registry.example/guest:v1", "pullMethod": "node"}})
    pod = imported(cluster, dv)
    spec = pod["spec"]
    importer, server = spec["containers"]
    (init,) = spec["initContainers"]
    assert init["image"] == IMAGE
    assert init["command"] == ["cp", "/bin/busybox", "/shared/busybox"]
    assert server["name"] == "server"
    assert server["image"] == "registry.example/guest:v1"  # the node's runtime pulls it
    assert server["command"][:3] == ["/shared/busybox", "sh", "-c"]
    for container in (importer, server, init):
        assert {"name": "shared-volume", "mountPath": "/shared"} in container["volumeMounts"]
        assert container["securityContext"] == importer["securityContext"]
    assert {"name": "shared-volume", "emptyDir": {}} in spec["volumes"]
    assert "cdi-scratch-vol" not in [v["name"] for v in spec["volumes"]]
    env = env_of(pod)
    assert env["IMPORTER_SOURCE"] == "http"
    assert env["IMPORTER_ENDPOINT"] == "http://localhost:8100/disk.img"
    assert env["IMPORTER_PULL_METHOD"] == "node"
    assert (env["IMPORTER_READY_FILE"], env["IMPORTER_DONE_FILE"]) == ("/shared/ready", "/shared/done")


def test_the_importers_status_is_read_whatever_order_the_kubelet_lists_containers_in() -> None:
    cluster = standard_cluster()
    dv = data_volume(source={"registry": {"url": "docker://registry.example/guest:v1", "pullMethod": "node"}})
    imported(cluster, dv)
    status = terminated(0, '{"scratchSpaceRequired":false,"message":"Import Complete"}')
    status["containerStatuses"].insert(
        0, {"name": "server", "restartCount": 0, "state": {"terminated": {"exitCode": 0, "message": ""}}}
    )
    set_pod_status(cluster, "importer-dv", status)
    cluster.settle("dv")
    pvc = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")
    assert pvc["metadata"]["annotations"][A + "storage.pod.phase"] == "Succeeded"
    assert pvc["metadata"]["annotations"][A + "storage.condition.running.message"] == "Import Complete"


def test_block_claims_are_a_device_and_blank_has_no_endpoint() -> None:
    cluster = standard_cluster()
    dv = data_volume(
        source={"blank": {}},
        storage={
            "volumeMode": "Block",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    )
    pod = imported(cluster, dv)
    container = pod["spec"]["containers"][0]
    assert container["volumeDevices"] == [{"name": "cdi-data-vol", "devicePath": "/dev/cdi-block-volume"}]
    assert "volumeMounts" not in container
    assert "fsGroup" not in pod["spec"]["securityContext"]
    env = env_of(pod)
    assert (env["IMPORTER_SOURCE"], env["IMPORTER_ENDPOINT"], env["FILESYSTEM_OVERHEAD"]) == ("none", "", "0")


def test_wffc_claims_wait_unless_immediate_binding_is_asked() -> None:
    cluster = standard_cluster(wffc=True)
    cluster.add(DATA_VOLUMES, data_volume())
    cluster.settle("dv")
    assert cluster.api.objects_of(PODS) == []
    immediate = standard_cluster(wffc=True)
    immediate.add(DATA_VOLUMES, data_volume(annotations={A + "storage.bind.immediate.requested": ""}))
    immediate.settle("dv")
    assert [p["metadata"]["name"] for p in immediate.api.objects_of(PODS)] == ["importer-dv"]


def test_pod_state_goes_onto_the_claim_and_success_deletes_the_pod() -> None:
    cluster = standard_cluster()
    imported(cluster, data_volume())
    set_pod_status(cluster, "importer-dv", running(restarts=1))
    cluster.settle("dv")
    annotations = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")["metadata"]["annotations"]
    assert annotations[A + "storage.pod.phase"] == "Running"
    assert annotations[A + "storage.pod.restarts"] == "1"
    assert annotations[A + "storage.condition.running"] == "true"
    assert annotations[A + "storage.condition.running.reason"] == "Pod is running"
    message = (
        '{"message":"Import Complete","labels":{"instancetype.kubevirt.io/default-instancetype":"u1.small"}}'
    )
    set_pod_status(cluster, "importer-dv", terminated(0, message))
    cluster.settle("dv")
    pvc = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")
    assert pvc["metadata"]["annotations"][A + "storage.pod.phase"] == "Succeeded"
    assert pvc["metadata"]["annotations"][A + "storage.condition.running.message"] == "Import Complete"
    assert pvc["metadata"]["labels"]["instancetype.kubevirt.io/default-instancetype"] == "u1.small"
    assert ("Normal", "ImportSucceeded", "Import Successful") in cluster.events.seen
    assert cluster.api.objects_of(PODS) == []


def test_retained_pod_stays_after_success() -> None:
    cluster = standard_cluster()
    imported(cluster, data_volume(annotations={A + "storage.pod.retainAfterCompletion": "true"}))
    set_pod_status(cluster, "importer-dv", terminated(0, '{"message":"Import Complete"}'))
    cluster.settle("dv")
    assert [p["metadata"]["name"] for p in cluster.api.objects_of(PODS)] == ["importer-dv"]


def test_image_pull_failure_and_full_volume_reasons() -> None:
    cluster = standard_cluster()
    imported(cluster, data_volume())
    waiting = {
        "phase": "Pending",
        "containerStatuses": [
            {
                "name": "importer",
                "image": IMAGE,
                "started": False,
                "state": {"waiting": {"reason": "ErrImagePull"}},
            }
        ],
    }
    set_pod_status(cluster, "importer-dv", waiting)
    cluster.settle("dv")
    annotations = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")["metadata"]["annotations"]
    assert annotations[A + "storage.condition.running.reason"] == "ImagePullFailed"
    assert annotations[A + "storage.condition.running.message"] == f"failed to pull image: {IMAGE}"
    full = terminated(
        1,
        "Unable to process data: virtual image size 5 is larger than the reported available storage 1",
        "Running",
        "Error",
    )
    set_pod_status(cluster, "importer-dv", full)
    cluster.settle("dv")
    annotations = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")["metadata"]["annotations"]
    assert annotations[A + "storage.condition.running.message"] == "DataVolume too small to contain image"
    assert annotations[A + "storage.condition.running.reason"] == "Error"


def test_scratch_space_request_restarts_the_pod_with_a_scratch_claim() -> None:
    cluster = standard_cluster()
    imported(cluster, data_volume())
    set_pod_status(cluster, "importer-dv", terminated(0, '{"scratchSpaceRequired":true}'))
    cluster.sync()
    cluster.reconcile_import("dv")
    annotations = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")["metadata"]["annotations"]
    assert annotations[A + "storage.import.requiresScratch"] == "true"
    assert annotations[A + "storage.condition.running.reason"] == "Scratch space required"
    assert A + "storage.pod.phase" not in annotations or annotations[A + "storage.pod.phase"] != "Succeeded"
    assert cluster.api.objects_of(PODS) == []
    cluster.sync()
    cluster.reconcile_import("dv")
    pod = cluster.get(PODS, "importer-dv")
    mounts = pod["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "cdi-scratch-vol", "mountPath": "/scratch"} in mounts
    scratch = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv-scratch")
    assert scratch["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert scratch["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert scratch["spec"]["storageClassName"] == "local"
    # usable(1.06 GiB claim) = 1 GiB image, + 6 % on the scratch class, rounded up to 1 MiB
    assert scratch["spec"]["resources"]["requests"]["storage"] == str(1086 << 20)
    assert scratch["metadata"]["labels"]["velero.io/exclude-from-backup"] == "true"
    set_pod_status(cluster, "importer-dv", {"phase": "Pending"})
    cluster.reconcile_import("dv")
    annotations = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")["metadata"]["annotations"]
    assert annotations[A + "storage.import.requiresScratch"] == "false"
    assert annotations[A + "storage.condition.bound.reason"] == "Claim Pending"  # the scratch claim's


def test_a_claim_in_use_gets_no_importer() -> None:
    cluster = standard_cluster()
    cluster.add(DATA_VOLUMES, data_volume())
    cluster.settle("dv")
    user = {
        "metadata": {"name": "user", "namespace": "default"},
        "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "dv"}}]},
        "status": {"phase": "Running"},
    }
    cluster.add(PODS, user)
    set_claim_phase(cluster, "dv", "Bound")
    cluster.settle("dv")
    assert ("ImportTargetInUse", "pod default/user using PersistentVolumeClaim dv") in cluster.warnings()
    assert [p["metadata"]["name"] for p in cluster.api.objects_of(PODS)] == ["user"]
