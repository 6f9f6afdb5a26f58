"""The source pod of a host-assisted clone, as CDI's clone controller makes it: ``<target uid>-source-pod``
in the source claim's namespace (container ``cdi-clone-source``), mounting the source claim read-only (or
its device), streaming to the target's upload server with a client certificate kept in a Secret of the
pod's name. It cannot be owned by the target claim (another namespace): it names it in
``cdi.kubevirt.io/storage.ownerRef`` and the claim holds a finalizer until the pod is gone.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.importerpod import owner_uid
from kubevirt.cdi_controller.render import recommended_labels
from kubevirt.cdi_controller.uploadcerts import ClientTLS
from kubevirt.cdi_controller.uploadpod import service_name_of, upload_pod_name
from kubevirt.cdi_controller.workerpod import DATA_VOLUME, WorkerImage, allowed_annotations, common_pod_spec
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.cdi.constants import Annotation, Clone, ImporterEnv, Label, Upload
from kubevirt_api.view import JSON

METRICS_PORT = 8443


def source_pod_name(target: Mapping[str, Any]) -> str:
    recorded = meta.annotations_of(target).get(Annotation.CLONE_SOURCE_POD)
    return recorded or meta.uid(target) + Clone.SOURCE_POD_SUFFIX


def clone_request(target: Mapping[str, Any]) -> tuple[str, str] | None:
    """The source (namespace, name) the target claim asks for, None when the annotation is malformed."""
    namespace, slash, name = meta.annotations_of(target).get(Annotation.CLONE_REQUEST, "").partition("/")
    if not slash or not namespace or not name or "/" in name:
        return None
    return namespace, name


def upload_url(target: Mapping[str, Any]) -> str:
    """The target's upload server, through its Service (CDI's GetUploadServerURL, sync path)."""
    service = service_name_of(upload_pod_name(target))
    return f"https://{service}.{meta.namespace(target)}.svc{Upload.PATH_SYNC}"


def owner_ref_text(target: Mapping[str, Any]) -> str:
    return f"{meta.namespace(target)}/{meta.name(target)}"


def _secret_env(name: str, secret: str, key: str) -> JSON:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def source_pod(
    target: Mapping[str, Any],
    source: Mapping[str, Any],
    settings: WorkerImage,
    caches: Caches,
    server_ca_pem: bytes,
) -> JSON:
    name = source_pod_name(target)
    block = meta.volume_mode(source.get("spec") or {}) == meta.BLOCK
    env: list[JSON] = [
        _secret_env("CLIENT_KEY", name, "tls.key"),
        _secret_env("CLIENT_CERT", name, "tls.crt"),
        {"name": "SERVER_CA_CERT", "value": server_ca_pem.decode()},
        {"name": "UPLOAD_URL", "value": upload_url(target)},
        {"name": ImporterEnv.OWNER_UID, "value": owner_uid(target)},
        {
            "name": ImporterEnv.PREALLOCATION,
            "value": meta.annotations_of(target).get(Annotation.PREALLOCATION_REQUESTED, ""),
        },
        {"name": "VOLUME_MODE", "value": "block" if block else "filesystem"},
        {"name": "MOUNT_POINT", "value": Clone.BLOCK_DEVICE if block else Clone.SOURCE_MOUNT},
    ]
    container: JSON = {
        "name": Clone.SOURCE_CONTAINER,
        "image": settings.image,
        "imagePullPolicy": settings.pull_policy,
        "env": env,
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if block:
        container["volumeDevices"] = [{"name": DATA_VOLUME, "devicePath": Clone.BLOCK_DEVICE}]
    else:
        container["volumeMounts"] = [{"name": DATA_VOLUME, "mountPath": Clone.SOURCE_MOUNT, "readOnly": True}]
    resources = caches.config_status().get("defaultPodResourceRequirements")
    if resources:
        container["resources"] = dict(resources)
    pod_spec: JSON = {
        "containers": [container],
        "restartPolicy": "OnFailure",
        "volumes": [{"name": DATA_VOLUME, "persistentVolumeClaim": {"claimName": meta.name(source)}}],
    }
    common_pod_spec(target, caches, pod_spec)
    _affinity(pod_spec, target, source)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta.namespace(source),
            "labels": {
                Label.APP: Label.APP_VALUE,
                Label.COMPONENT: Clone.SOURCE_CONTAINER,
                Clone.UNIQUE_ID_LABEL: name,
                cdi.PROMETHEUS_LABEL: "true",
                Clone.SOURCE_CLAIM_LABEL: meta.uid(source),
                **recommended_labels(),
            },
            "annotations": {
                cdi.POD_CREATED_BY_CONTROLLER: "yes",
                Annotation.OWNER_REF: owner_ref_text(target),
                **allowed_annotations(target),
            },
        },
        "spec": pod_spec,
    }


def _affinity(pod_spec: JSON, target: Mapping[str, Any], source: Mapping[str, Any]) -> None:
    """Beside the other source pods of a ReadWriteOnce source (required), and near the target's upload
    server (preferred), as CDI places it."""
    affinity = pod_spec.setdefault("affinity", {}).setdefault("podAffinity", {})
    if (source.get("spec") or {}).get("accessModes") == ["ReadWriteOnce"]:
        affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(
            {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": Clone.SOURCE_CLAIM_LABEL, "operator": "In", "values": [meta.uid(source)]}
                    ]
                },
                "namespaces": [meta.namespace(source)],
                "topologyKey": "kubernetes.io/hostname",
            }
        )
    affinity.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
        {
            "weight": 100,
            "podAffinityTerm": {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": Upload.TARGET_LABEL, "operator": "In", "values": [meta.uid(target)]}
                    ]
                },
                "namespaces": [meta.namespace(target)],
                "topologyKey": "kubernetes.io/hostname",
            },
        }
    )


def client_secret(pod: Mapping[str, Any], tls: ClientTLS) -> JSON:
    """The source pod's client certificate, named as the pod and owned by it."""
    data = {"tls.key": tls.key_pem, "tls.crt": tls.cert_pem}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": meta.name(pod),
            "namespace": meta.namespace(pod),
            "labels": {Label.APP: Label.APP_VALUE, **recommended_labels()},
            "annotations": {Annotation.OWNER_REF: meta.annotations_of(pod).get(Annotation.OWNER_REF, "")},
            "ownerReferences": [meta.owner_reference(pod, "v1", "Pod")],
        },
        "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
    }
