"""Host-assisted ``pvc`` clones: the DataVolume's checks before its claim (source, use, compatibility,
token), the clone-mode upload server, the source pod and its client certificate, the phases, success,
cleanup, and the refusals of clones nobody authorized."""

from __future__ import annotations

import base64
import datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from kubevirt.cdi import token
from kubevirt.cdi_controller.clone import CloneError
from kubevirt.client import CONFIG_MAPS, PERSISTENT_VOLUME_CLAIMS, PODS
from kubevirt.client.resources import DATA_VOLUMES, SECRETS
from kubevirt.service.certs import new_ca

from .harness import (
    CDI_NS,
    CERT_TIME,
    CLONER_IMAGE,
    NS,
    Cluster,
    data_volume,
    set_pod_status,
    standard_cluster,
)
from .test_upload import with_signers

A = "cdi.kubevirt.io/"
OTHER = "other"
UPLOAD_POD = "cdi-upload-dv"
CLONE_COMPLETE = '{"preallocationApplied":false,"message":"Clone Complete"}'
JSON = dict[str, Any]


def source_claim(namespace: str = NS, name: str = "src", size: str = "1Gi", **spec: Any) -> JSON:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {A + "storage.contentType": "kubevirt"},
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "volumeMode": "Filesystem",
            "storageClassName": "local",
            "resources": {"requests": {"storage": size}},
            **spec,
        },
        "status": {"phase": "Bound", "capacity": {"storage": size}},
    }


def clone_dv(namespace: str = NS, name: str = "src", **extra: Any) -> JSON:
    return data_volume(source={"pvc": {"namespace": namespace, "name": name}}, storage={}, **extra)


def with_key(cluster: Cluster) -> Any:
    key = token.new_signing_key()
    cluster.add(
        SECRETS,
        {
            "metadata": {"name": "cdi-api-signing-key", "namespace": CDI_NS},
            "data": {"id_rsa": base64.b64encode(token.private_key_pem(key)).decode()},
        },
    )
    return key


def with_client_signer(cluster: Cluster) -> None:
    client_ca = new_ca("cdi-uploadserver-client-signer", CERT_TIME, datetime.timedelta(hours=48))
    server_bundle = new_ca("cdi-uploadserver-signer", CERT_TIME, datetime.timedelta(hours=48))
    data = {"tls.crt": client_ca.cert_pem, "tls.key": client_ca.key_pem}
    cluster.add(
        SECRETS,
        {
            "metadata": {"name": "cdi-uploadserver-client-signer", "namespace": CDI_NS},
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
        },
    )
    cluster.add(
        CONFIG_MAPS,
        {
            "metadata": {"name": "cdi-uploadserver-signer-bundle", "namespace": CDI_NS},
            "data": {"ca-bundle.crt": server_bundle.cert_pem.decode()},
        },
    )


def clone_cluster() -> Cluster:
    cluster = standard_cluster()
    with_signers(cluster)
    with_client_signer(cluster)
    return cluster


def bind(cluster: Cluster, name: str = "dv") -> None:
    cluster.edit(
        PERSISTENT_VOLUME_CLAIMS,
        name,
        lambda pvc: pvc.__setitem__(
            "status", {"phase": "Bound", "capacity": pvc["spec"]["resources"]["requests"]}
        ),
    )


def ready_upload_server(cluster: Cluster) -> None:
    status = {
        "phase": "Running",
        "containerStatuses": [
            {"name": "cdi-upload-server", "ready": True, "restartCount": 0, "state": {"running": {}}}
        ],
    }
    set_pod_status(cluster, UPLOAD_POD, status)


def phase(cluster: Cluster) -> str:
    return str((cluster.get(DATA_VOLUMES, "dv").get("status") or {}).get("phase", ""))


def pods_in(cluster: Cluster, namespace: str) -> list[JSON]:
    return [pod for pod in cluster.api.objects_of(PODS) if pod["metadata"]["namespace"] == namespace]


def test_same_namespace_clone_runs_source_pod_against_a_clone_mode_upload_server() -> None:
    cluster = clone_cluster()
    cluster.add(PERSISTENT_VOLUME_CLAIMS, source_claim(size="2Gi"))
    cluster.add(DATA_VOLUMES, clone_dv())
    cluster.settle("dv")
    pvc = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")
    annotations = pvc["metadata"]["annotations"]
    assert annotations["k8s.io/CloneRequest"] == "default/src"
    assert annotations[A + "cloneType"] == "copy"
    # No size asked: the source's, rendered as a DataVolume asking for it would be (filesystem overhead).
    assert 2 * 2**30 < int(pvc["spec"]["resources"]["requests"]["storage"]) < 2.2 * 2**30
    assert A + "storage.extended.clone.token" not in annotations  # same namespace: no token needed

    bind(cluster)
    cluster.settle("dv")
    upload = cluster.get(PODS, UPLOAD_POD)
    env = {e["name"]: e.get("value") for e in upload["spec"]["containers"][0]["env"]}
    assert env["CLIENT_NAME"] == "default/src-default/dv"
    assert [v["name"] for v in upload["spec"]["volumes"]] == ["tls-config", "cdi-data-vol"]  # no scratch
    assert phase(cluster) == "CloneScheduled"
    assert pods_in(cluster, NS) == [upload]  # no source pod before the server is ready

    ready_upload_server(cluster)
    cluster.settle("dv")
    pvc = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")
    source_pod_name = pvc["metadata"]["uid"] + "-source-pod"
    assert pvc["metadata"]["annotations"][A + "storage.sourceClonePodName"] == source_pod_name
    assert "cdi.kubevirt.io/cloneSource" in pvc["metadata"]["finalizers"]
    source_pod = cluster.get(PODS, source_pod_name)
    container = source_pod["spec"]["containers"][0]
    assert container["image"] == CLONER_IMAGE
    env = {e["name"]: e for e in container["env"]}
    assert env["UPLOAD_URL"]["value"] == "https://cdi-upload-dv.default.svc/v1beta1/upload"
    assert env["VOLUME_MODE"]["value"] == "filesystem"
    assert env["CLIENT_CERT"]["valueFrom"]["secretKeyRef"] == {"name": source_pod_name, "key": "tls.crt"}
    assert container["volumeMounts"] == [
        {"name": "cdi-data-vol", "mountPath": "/var/run/cdi/clone/source", "readOnly": True}
    ]
    assert source_pod["spec"]["volumes"][0]["persistentVolumeClaim"] == {"claimName": "src"}
    assert source_pod["metadata"]["annotations"][A + "storage.ownerRef"] == "default/dv"
    secret = cluster.get(SECRETS, source_pod_name)
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    common_name = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    assert common_name == "default/src-default/dv"
    assert phase(cluster) == "CloneInProgress"

    set_pod_status(
        cluster,
        UPLOAD_POD,
        {
            "phase": "Succeeded",
            "containerStatuses": [
                {
                    "name": "cdi-upload-server",
                    "restartCount": 0,
                    "state": {
                        "terminated": {"exitCode": 0, "message": CLONE_COMPLETE, "reason": "Completed"}
                    },
                }
            ],
        },
    )
    cluster.settle("dv")
    pvc = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")
    assert pvc["metadata"]["annotations"]["k8s.io/CloneOf"] == "true"
    assert "cdi.kubevirt.io/cloneSource" not in (pvc["metadata"].get("finalizers") or [])
    assert source_pod_name not in [p["metadata"]["name"] for p in cluster.api.objects_of(PODS)]
    assert phase(cluster) == "Succeeded"
    dv_status = cluster.get(DATA_VOLUMES, "dv")["status"]
    assert dv_status["progress"] == "100.0%"
    assert "CloneSucceeded" in cluster.reasons()
    assert "UploadSucceeded" not in cluster.reasons()


def test_missing_source_leaves_the_dv_pending_without_a_claim() -> None:
    cluster = clone_cluster()
    cluster.add(DATA_VOLUMES, clone_dv())
    cluster.settle("dv")
    assert phase(cluster) == "Pending"
    assert ("CloneWithoutSource", "The source pvc src doesn't exist") in cluster.warnings()
    assert cluster.api.objects_of(PERSISTENT_VOLUME_CLAIMS) == []


def test_source_in_use_by_a_running_pod_waits() -> None:
    cluster = clone_cluster()
    cluster.add(PERSISTENT_VOLUME_CLAIMS, source_claim())
    cluster.add(
        PODS,
        {
            "metadata": {"name": "vm-pod", "namespace": NS},
            "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "src"}}]},
            "status": {"phase": "Running"},
        },
    )
    cluster.add(DATA_VOLUMES, clone_dv())
    assert cluster.reconcile_dv("dv") == 5.0
    cluster.sync()
    assert phase(cluster) == "CloneScheduled"
    assert cluster.warnings() == [("CloneSourceInUse", "pod default/vm-pod using PersistentVolumeClaim src")]
    assert [p["metadata"]["name"] for p in cluster.api.objects_of(PERSISTENT_VOLUME_CLAIMS)] == ["src"]


def test_a_source_capacity_rounded_up_by_its_provisioner_does_not_refuse_an_equal_request() -> None:
    cluster = clone_cluster()
    source = source_claim(size="71135396")
    source["status"]["capacity"]["storage"] = "68Mi"  # 71303168
    cluster.add(PERSISTENT_VOLUME_CLAIMS, source)
    cluster.add(
        DATA_VOLUMES,
        data_volume(
            source={"pvc": {"name": "src"}}, storage={"resources": {"requests": {"storage": "64Mi"}}}
        ),
    )
    cluster.settle("dv")
    assert cluster.warnings() == []
    assert (
        cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")["metadata"]["annotations"]["k8s.io/CloneRequest"]
        == "default/src"
    )


def test_target_smaller_than_the_source_is_refused() -> None:
    cluster = clone_cluster()
    cluster.add(PERSISTENT_VOLUME_CLAIMS, source_claim(size="4Gi"))
    cluster.add(DATA_VOLUMES, data_volume(source={"pvc": {"name": "src"}}))  # asks for 1Gi
    cluster.settle("dv")
    assert phase(cluster) == "Pending"
    assert cluster.warnings() == [
        (
            "CloneValidationFailed",
            "The clone doesn't meet the validation requirements: "
            "target resources requests storage size is smaller than the source",
        )
    ]
    assert [p["metadata"]["name"] for p in cluster.api.objects_of(PERSISTENT_VOLUME_CLAIMS)] == ["src"]


def short_token(key: Any, *, name: str = "src", target: str = "dv") -> str:
    payload = token.Payload(
        operation="Clone",
        name=name,
        namespace=OTHER,
        params={"targetNamespace": NS, "targetName": target},
    )
    return token.generate(payload, key)


def test_cross_namespace_clone_without_a_token_is_refused() -> None:
    cluster = clone_cluster()
    with_key(cluster)
    cluster.add(PERSISTENT_VOLUME_CLAIMS, source_claim(OTHER))
    cluster.add(DATA_VOLUMES, clone_dv(OTHER))
    cluster.settle("dv")
    assert phase(cluster) == "Pending"
    assert cluster.warnings() == [
        ("CloneValidationFailed", "The clone doesn't meet the validation requirements: clone token missing")
    ]
    assert [p["metadata"]["name"] for p in cluster.api.objects_of(PERSISTENT_VOLUME_CLAIMS)] == ["src"]


def test_cross_namespace_token_for_another_source_is_refused() -> None:
    cluster = clone_cluster()
    key = with_key(cluster)
    cluster.add(PERSISTENT_VOLUME_CLAIMS, source_claim(OTHER))
    cluster.add(
        DATA_VOLUMES, clone_dv(OTHER, annotations={A + "storage.clone.token": short_token(key, name="x")})
    )
    cluster.settle("dv")
    assert cluster.warnings() == [
        ("CloneValidationFailed", "The clone doesn't meet the validation requirements: invalid token")
    ]


def test_cross_namespace_clone_with_the_webhooks_token_runs_its_source_pod_there() -> None:
    cluster = clone_cluster()
    key = with_key(cluster)
    cluster.add(PERSISTENT_VOLUME_CLAIMS, source_claim(OTHER))
    cluster.add(DATA_VOLUMES, clone_dv(OTHER, annotations={A + "storage.clone.token": short_token(key)}))
    cluster.settle("dv")
    dv = cluster.get(DATA_VOLUMES, "dv")
    extended = dv["metadata"]["annotations"][A + "storage.extended.clone.token"]
    payload = token.validate(extended, key.public_key(), issuer="cdi-deployment")
    assert payload.params == {"targetNamespace": NS, "targetName": "dv", "uid": dv["metadata"]["uid"]}
    pvc = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")
    assert pvc["metadata"]["annotations"][A + "storage.extended.clone.token"] == extended
    bind(cluster)
    cluster.settle("dv")
    ready_upload_server(cluster)
    cluster.settle("dv")
    sources = pods_in(cluster, OTHER)
    assert [p["metadata"]["name"] for p in sources] == [pvc["metadata"]["uid"] + "-source-pod"]


def test_a_hand_made_cross_namespace_clone_request_gets_no_source_pod() -> None:
    cluster = clone_cluster()
    with_key(cluster)
    cluster.add(PERSISTENT_VOLUME_CLAIMS, source_claim(OTHER, name="secret-data"))
    cluster.add(
        PERSISTENT_VOLUME_CLAIMS,
        {
            "metadata": {
                "name": "dv",
                "namespace": NS,
                "annotations": {"k8s.io/CloneRequest": "other/secret-data"},
            },
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    )
    bind(cluster)
    for _ in range(2):
        cluster.reconcile_upload("dv")
        cluster.sync()
    ready_upload_server(cluster)
    cluster.reconcile_upload("dv")
    cluster.sync()
    cluster.reconcile_clone("dv")  # the source pod's name and the finalizer
    cluster.sync()
    with pytest.raises(CloneError, match="clone token missing"):
        cluster.reconcile_clone("dv")
    assert pods_in(cluster, OTHER) == []
    assert (
        "CloneValidationFailed",
        "The clone doesn't meet the validation requirements: clone token missing",
    ) in (cluster.warnings())


def test_deleting_the_target_mid_clone_removes_the_source_pod_and_the_finalizer() -> None:
    cluster = clone_cluster()
    cluster.add(PERSISTENT_VOLUME_CLAIMS, source_claim())
    cluster.add(DATA_VOLUMES, clone_dv())
    cluster.settle("dv")
    bind(cluster)
    cluster.settle("dv")
    ready_upload_server(cluster)
    cluster.settle("dv")
    name = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")["metadata"]["annotations"][
        A + "storage.sourceClonePodName"
    ]
    assert cluster.get(PODS, name)
    cluster.edit(
        PERSISTENT_VOLUME_CLAIMS,
        "dv",
        lambda pvc: pvc["metadata"].__setitem__("deletionTimestamp", "2026-01-01T12:00:00Z"),
    )
    cluster.reconcile_clone("dv")
    cluster.sync()
    assert name not in [p["metadata"]["name"] for p in cluster.api.objects_of(PODS)]
    assert "cdi.kubevirt.io/cloneSource" not in (
        cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")["metadata"].get("finalizers") or []
    )
