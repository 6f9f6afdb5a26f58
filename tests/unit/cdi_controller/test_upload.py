"""The upload controller and the DataVolume's upload phases: the claim of an upload DataVolume, the upload
server pod, Service and TLS Secret, the certificate, the pod's state on the claim, success and cleanup,
the deadline restart, a deleted claim."""

from __future__ import annotations

import base64
import datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.verification import PolicyBuilder, Store

from kubevirt.cdi_controller import tlsprofile
from kubevirt.cdi_controller.uploadcerts import UploadCertError
from kubevirt.client import CONFIG_MAPS, PERSISTENT_VOLUME_CLAIMS, PODS
from kubevirt.client.resources import CDIS, DATA_VOLUMES, SECRETS, SERVICES
from kubevirt.service.certs import KeyPair, new_ca

from .harness import (
    CDI_NS,
    CERT_TIME,
    NS,
    UPLOAD_IMAGE,
    Cluster,
    data_volume,
    set_claim_phase,
    set_pod_status,
    standard_cluster,
)

A = "cdi.kubevirt.io/"
POD = "cdi-upload-dv"
UPLOAD_COMPLETE = '{"preallocationApplied":false,"message":"Upload Complete"}'


def with_signers(cluster: Cluster) -> tuple[KeyPair, KeyPair]:
    """The upload server signer Secret and the client CA bundle, as CDI's operator keeps them."""
    signer = new_ca("cdi-uploadserver-signer", CERT_TIME, datetime.timedelta(hours=48))
    client_ca = new_ca("cdi-uploadserver-client-signer", CERT_TIME, datetime.timedelta(hours=48))
    data = {"tls.crt": signer.cert_pem, "tls.key": signer.key_pem}
    cluster.add(
        SECRETS,
        {
            "metadata": {"name": "cdi-uploadserver-signer", "namespace": CDI_NS},
            "type": "kubernetes.io/tls",
            "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
        },
    )
    cluster.add(
        CONFIG_MAPS,
        {
            "metadata": {"name": "cdi-uploadserver-client-signer-bundle", "namespace": CDI_NS},
            "data": {"ca-bundle.crt": client_ca.cert_pem.decode()},
        },
    )
    return signer, client_ca


def uploading(*, wffc: bool = False, storage: dict[str, Any] | None = None) -> Cluster:
    cluster = standard_cluster(wffc=wffc)
    with_signers(cluster)
    cluster.add(DATA_VOLUMES, data_volume(source={"upload": {}}, storage=storage))
    cluster.settle("dv")
    return cluster


def bound(cluster: Cluster) -> dict[str, Any]:
    set_claim_phase(cluster, "dv", "Bound")
    cluster.settle("dv")
    return cluster.get(PODS, POD)


def env_of(pod: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["name"], e["value"]) for e in pod["spec"]["containers"][0]["env"]]


def claim_annotations(cluster: Cluster, name: str = "dv") -> dict[str, str]:
    return dict(cluster.get(PERSISTENT_VOLUME_CLAIMS, name)["metadata"]["annotations"])


def dv_status(cluster: Cluster) -> dict[str, Any]:
    return dict(cluster.get(DATA_VOLUMES, "dv").get("status") or {})


def server_status(*, ready: bool, phase: str = "Running", restarts: int = 0) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {}} if phase == "Running" else {"waiting": {"reason": "Creating"}}
    return {
        "phase": phase,
        "podIP": "10.0.0.9",
        "containerStatuses": [
            {"name": "cdi-upload-server", "ready": ready, "restartCount": restarts, "state": state}
        ],
    }


def exited(exit_code: int, message: str) -> dict[str, Any]:
    reason = "Completed" if exit_code == 0 else "Error"
    state = {"terminated": {"exitCode": exit_code, "message": message, "reason": reason}}
    phase = "Succeeded" if exit_code == 0 else "Running"
    status = {"name": "cdi-upload-server", "ready": False, "state": state}
    return {"phase": phase, "containerStatuses": [status]}


def test_upload_dv_claim_is_an_upload_target() -> None:
    cluster = uploading()
    pvc = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")
    ann = pvc["metadata"]["annotations"]
    assert ann[A + "storage.upload.target"] == ""
    assert ann[A + "storage.contentType"] == "kubevirt"
    assert not [key for key in ann if key.startswith(A + "storage.import.")]
    assert cluster.api.objects_of(PODS) == []  # not bound yet
    assert dv_status(cluster)["phase"] == "Pending"
    assert dv_status(cluster)["progress"] == "N/A"


def test_upload_pod_service_and_secret() -> None:
    cluster = uploading()
    pod = bound(cluster)
    pvc = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv")
    assert pvc["metadata"]["annotations"][A + "storage.uploadPodName"] == POD
    meta = pod["metadata"]
    assert meta["labels"] == {
        "app": "containerized-data-importer",
        "cdi.kubevirt.io": "cdi-upload-server",
        "service": POD,
        "cdi.kubevirt.io/uploadTarget": pvc["metadata"]["uid"],
        "app.kubernetes.io/managed-by": "cdi-controller",
        "app.kubernetes.io/component": "storage",
    }
    assert meta["annotations"] == {
        A + "storage.createdByUploadController": "yes",
        "sidecar.istio.io/inject": "false",
        "linkerd.io/inject": "disabled",
    }
    owner = meta["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "PersistentVolumeClaim",
        "dv",
        pvc["metadata"]["uid"],
        True,
    )
    spec = pod["spec"]
    assert spec["restartPolicy"] == "OnFailure"
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}, "fsGroup": 107}
    assert spec["volumes"] == [
        {"name": "tls-config", "secret": {"secretName": POD}},
        {"name": "cdi-data-vol", "persistentVolumeClaim": {"claimName": "dv", "readOnly": False}},
        {"name": "cdi-scratch-vol", "persistentVolumeClaim": {"claimName": "dv-scratch", "readOnly": False}},
    ]
    container = spec["containers"][0]
    assert container["name"] == "cdi-upload-server"
    assert container["image"] == UPLOAD_IMAGE
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["args"] == ["-v=1"]
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert container["resources"] == {"limits": {"cpu": "750m", "memory": "600M"}}
    assert container["readinessProbe"] == {
        "httpGet": {"path": "/healthz", "port": 8443, "scheme": "HTTPS"},
        "initialDelaySeconds": 2,
        "periodSeconds": 5,
    }
    assert container["volumeMounts"] == [
        {"name": "tls-config", "mountPath": "/etc/tls/"},
        {"name": "cdi-data-vol", "mountPath": "/data"},
        {"name": "cdi-scratch-vol", "mountPath": "/scratch"},
    ]
    assert container["securityContext"]["runAsUser"] == 107
    intermediate, _ = tlsprofile.ciphers_and_min_version(None)
    assert env_of(pod) == [
        ("TLS_KEY_FILE", "/etc/tls/tls.key"),
        ("TLS_CERT_FILE", "/etc/tls/tls.crt"),
        ("CLIENT_CERT_FILE", "/etc/tls/ca.crt"),
        ("FILESYSTEM_OVERHEAD", "0.06"),
        ("UPLOAD_IMAGE_SIZE", "1138166334"),
        ("CLIENT_NAME", "client.upload-server.cdi.kubevirt.io"),
        ("PREALLOCATION", "false"),
        ("TLS_CIPHERS", ",".join(intermediate)),
        ("TLS_MIN_VERSION", "VersionTLS12"),
        ("DEADLINE", "2026-01-02T00:00:00Z"),  # the 12 h after which the 24 h certificate is renewed
    ]
    service = cluster.get(SERVICES, POD)
    assert service["spec"] == {
        "ports": [{"protocol": "TCP", "port": 443, "targetPort": 8443}],
        "selector": {"service": POD},
    }
    assert service["metadata"]["labels"]["cdi.kubevirt.io"] == "cdi-upload-server"
    assert service["metadata"]["annotations"] == {A + "storage.createdByUploadController": "yes"}
    assert service["metadata"]["ownerReferences"][0]["uid"] == pvc["metadata"]["uid"]
    secret = cluster.get(SECRETS, POD)
    assert sorted(secret["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    assert secret["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert secret["metadata"]["ownerReferences"][0]["kind"] == "Pod"
    assert secret["metadata"]["labels"]["cdi.kubevirt.io"] == "cdi-upload-server"
    scratch = cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv-scratch")
    assert scratch["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert [p["metadata"]["name"] for p in cluster.api.objects_of(PODS)] == [POD]  # no importer


def test_server_certificate_verifies_for_the_service_names() -> None:
    cluster = standard_cluster()
    signer, client_ca = with_signers(cluster)
    cluster.add(DATA_VOLUMES, data_volume(source={"upload": {}}))
    cluster.settle("dv")
    bound(cluster)
    data = {k: base64.b64decode(v) for k, v in cluster.get(SECRETS, POD)["data"].items()}
    assert data["ca.crt"] == client_ca.cert_pem
    cert = x509.load_pem_x509_certificate(data["tls.crt"])
    key = serialization.load_pem_private_key(data["tls.key"], password=None)
    assert key.public_key() == cert.public_key()
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == datetime.timedelta(hours=24)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {POD, f"{POD}.{NS}", f"{POD}.{NS}.svc"} <= set(names.get_values_for_type(x509.DNSName))
    moment = CERT_TIME + datetime.timedelta(hours=1)
    for host in (f"{POD}.{NS}.svc", f"{POD}.{NS}", POD):
        verifier = (
            PolicyBuilder().store(Store([signer.cert])).time(moment).build_server_verifier(x509.DNSName(host))
        )
        verifier.verify(cert, [])
    other = new_ca("someone-else", CERT_TIME, datetime.timedelta(hours=48))
    stranger = (
        PolicyBuilder().store(Store([other.cert])).time(moment).build_server_verifier(x509.DNSName(POD))
    )
    with pytest.raises(x509.verification.VerificationError):
        stranger.verify(cert, [])


def test_missing_signer_makes_no_pod() -> None:
    cluster = standard_cluster()
    cluster.add(DATA_VOLUMES, data_volume(source={"upload": {}}))
    cluster.settle("dv")
    set_claim_phase(cluster, "dv", "Bound")
    cluster.reconcile_upload("dv")  # records the pod name
    cluster.sync()
    with pytest.raises(UploadCertError):
        cluster.uploads.reconcile(f"{NS}/dv")
    assert cluster.api.objects_of(PODS) == []


def test_phases_follow_the_upload_server() -> None:
    cluster = uploading()
    bound(cluster)
    assert dv_status(cluster)["phase"] == "UploadScheduled"
    set_pod_status(cluster, POD, {"phase": "Pending"})
    cluster.settle("dv")
    assert claim_annotations(cluster)[A + "storage.pod.phase"] == "Pending"
    assert dv_status(cluster)["phase"] == "UploadScheduled"
    set_pod_status(cluster, POD, server_status(ready=False))
    cluster.settle("dv")
    ann = claim_annotations(cluster)
    assert (ann[A + "storage.pod.phase"], ann[A + "storage.pod.ready"]) == ("Running", "false")
    assert dv_status(cluster)["phase"] == "UploadScheduled"  # the proxy waits for readiness
    set_pod_status(cluster, POD, server_status(ready=True, restarts=1))
    cluster.settle("dv")
    ann = claim_annotations(cluster)
    assert ann[A + "storage.pod.ready"] == "true"
    assert ann[A + "storage.pod.restarts"] == "1"
    assert ann[A + "storage.condition.running"] == "true"
    status = dv_status(cluster)
    assert status["phase"] == "UploadReady"
    assert status["progress"] == "N/A"
    assert status["restartCount"] == 1
    running = {c["type"]: c for c in status["conditions"]}["Running"]
    assert (running["status"], running["reason"]) == ("True", "Pod is running")
    assert ("Normal", "UploadReady", "Upload into dv ready") in cluster.events.seen


def test_success_cleans_up_and_the_dv_succeeds() -> None:
    cluster = uploading()
    bound(cluster)
    set_pod_status(cluster, POD, server_status(ready=True))
    cluster.settle("dv")
    set_pod_status(cluster, POD, exited(0, UPLOAD_COMPLETE))
    cluster.settle("dv")
    ann = claim_annotations(cluster)
    assert ann[A + "storage.pod.phase"] == "Succeeded"
    assert ann[A + "storage.condition.running.message"] == "Upload Complete"
    assert ann[A + "storage.condition.running.reason"] == "Completed"
    status = dv_status(cluster)
    assert status["phase"] == "Succeeded"
    assert status["progress"] == "N/A"  # CDI reports no upload progress
    assert ("Normal", "UploadSucceeded", "Successfully uploaded into dv") in cluster.events.seen
    assert ("Normal", "UploadSucceeded", "Upload Successful") in cluster.events.seen  # the claim's
    assert cluster.api.objects_of(PODS) == []
    assert cluster.api.objects_of(SERVICES) == []


def test_failed_server_warns_and_falls_back_to_scheduled() -> None:
    cluster = uploading()
    bound(cluster)
    set_pod_status(cluster, POD, server_status(ready=True))
    cluster.settle("dv")
    set_pod_status(cluster, POD, {**exited(1, "boom"), "phase": "Failed"})
    cluster.settle("dv")
    assert dv_status(cluster)["phase"] == "UploadScheduled"
    assert ("UploadFailed", "Upload into dv failed") in cluster.warnings()


def test_deadline_passed_replaces_the_pod() -> None:
    cluster = uploading()
    first = bound(cluster)
    set_pod_status(cluster, POD, exited(0, '{"deadlinePassed":true,"message":"Deadline Passed"}'))
    cluster.sync()
    cluster.reconcile_upload("dv")
    ann = claim_annotations(cluster)
    assert (ann[A + "storage.pod.phase"], ann[A + "storage.pod.ready"]) == ("", "false")
    assert cluster.api.objects_of(PODS) == []
    # The garbage collector follows the pod: its Secret and scratch claim go.
    cluster.api.delete(SECRETS, NS, POD)
    cluster.api.delete(PERSISTENT_VOLUME_CLAIMS, NS, "dv-scratch")
    cluster.settle("dv")
    second = cluster.get(PODS, POD)
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert cluster.get(SECRETS, POD)["metadata"]["ownerReferences"][0]["uid"] == second["metadata"]["uid"]
    assert dv_status(cluster)["phase"] == "UploadScheduled"


def test_deleted_claim_leaves_nothing_behind() -> None:
    cluster = uploading()
    pod = bound(cluster)
    cluster.edit(
        PERSISTENT_VOLUME_CLAIMS,
        "dv",
        lambda pvc: pvc["metadata"].update(deletionTimestamp="2026-01-01T13:00:00Z"),
    )
    cluster.reconcile_upload("dv")
    assert cluster.api.objects_of(PODS) == []
    assert cluster.api.objects_of(SERVICES) == []
    # The Secret and the scratch claim are the deleted pod's: the garbage collector takes them.
    owned = [*cluster.api.objects_of(SECRETS), cluster.get(PERSISTENT_VOLUME_CLAIMS, "dv-scratch")]
    assert all(
        o["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
        for o in owned
        if o["metadata"]["namespace"] == NS
    )


def test_plain_annotated_claim_gets_an_upload_server() -> None:
    cluster = standard_cluster()
    with_signers(cluster)
    claim = {
        "metadata": {
            "name": "disk",
            "namespace": NS,
            "annotations": {A + "storage.upload.target": ""},
        },
        "spec": {
            "volumeMode": "Block",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "2Gi"}},
        },
        "status": {"phase": "Bound"},
    }
    cluster.add(PERSISTENT_VOLUME_CLAIMS, claim)
    cluster.add(
        CDIS,
        {
            "metadata": {"name": "cdi"},
            "spec": {
                "workloads": {"nodeSelector": {"disk": "fast"}},
                "certConfig": {
                    "server": {"duration": "10h0m0s", "renewBefore": "5h0m0s"},
                    "client": {"duration": "24h", "renewBefore": "12h"},
                },
            },
        },
    )
    for _ in range(3):
        cluster.sync()
        cluster.reconcile_upload("disk")
    pod = cluster.get(PODS, "cdi-upload-disk")
    container = pod["spec"]["containers"][0]
    assert container["volumeDevices"] == [{"name": "cdi-data-vol", "devicePath": "/dev/cdi-block-volume"}]
    env = dict(env_of(pod))
    assert env["DESTINATION"] == "/dev/cdi-block-volume"
    assert env["FILESYSTEM_OVERHEAD"] == "0"
    assert env["UPLOAD_IMAGE_SIZE"] == "2Gi"
    assert env["DEADLINE"] == "2026-01-01T17:00:00Z"  # the server's 5 h refresh comes first
    assert pod["spec"]["nodeSelector"] == {"disk": "fast"}
    secret = cluster.get(SECRETS, "cdi-upload-disk")
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == datetime.timedelta(hours=10)
    assert cluster.get(SERVICES, "cdi-upload-disk")["spec"]["selector"] == {"service": "cdi-upload-disk"}


def test_wffc_claims_wait_and_claims_in_use_get_no_server() -> None:
    cluster = uploading(wffc=True)
    cluster.settle("dv")
    assert cluster.api.objects_of(PODS) == []
    user = {
        "metadata": {"name": "user", "namespace": NS},
        "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "dv"}}]},
        "status": {"phase": "Running"},
    }
    cluster.add(PODS, user)
    set_claim_phase(cluster, "dv", "Bound")
    cluster.settle("dv")
    assert ("UploadTargetInUse", "pod default/user using PersistentVolumeClaim dv") in cluster.warnings()
    assert [p["metadata"]["name"] for p in cluster.api.objects_of(PODS)] == ["user"]


def test_tls_profiles() -> None:
    assert tlsprofile.ciphers_and_min_version({"type": "Modern", "modern": {}}) == (
        ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"],
        "VersionTLS13",
    )
    custom_spec = {"ciphers": ["ECDHE-RSA-AES128-GCM-SHA256"], "minTLSVersion": "VersionTLS11"}
    custom = {"type": "Custom", "custom": custom_spec}
    assert tlsprofile.ciphers_and_min_version(custom) == (["ECDHE-RSA-AES128-GCM-SHA256"], "VersionTLS11")
    old, version = tlsprofile.ciphers_and_min_version({"type": "Old"})
    assert (len(old), old[-1], version) == (29, "DES-CBC3-SHA", "VersionTLS10")
