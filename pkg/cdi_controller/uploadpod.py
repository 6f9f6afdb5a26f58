"""The objects of a claim's upload server, as CDI's upload controller makes them: the pod
``cdi-upload-<claim>`` (container ``cdi-upload-server``), the Secret of the same name holding its TLS
material (owned by the pod), and the Service in front of it (owned by the claim), which the upload proxy
posts to on port 443."""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubevirt.cdi import naming
from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.importerpod import scratch_claim_name
from kubevirt.cdi_controller.render import recommended_labels
from kubevirt.cdi_controller.uploadcerts import ServerTLS
from kubevirt.cdi_controller.workerpod import (
    DATA_VOLUME,
    SCRATCH_VOLUME,
    WorkerImage,
    allowed_annotations,
    bool_text,
    claim_volume,
    worker_container,
    worker_pod,
)
from kubevirt_api.cdi.constants import Annotation, ImporterEnv, ImporterPaths, Label, Upload
from kubevirt_api.resource import Quantity
from kubevirt_api.view import JSON

CERT_VOLUME = "tls-config"
SERVICE_PORT = 443
TLS_CIPHERS_ENV = "TLS_CIPHERS"
TLS_MIN_VERSION_ENV = "TLS_MIN_VERSION"
TLS_KEY_FILE_ENV = "TLS_KEY_FILE"
TLS_CERT_FILE_ENV = "TLS_CERT_FILE"
CLIENT_CERT_FILE_ENV = "CLIENT_CERT_FILE"
PROBE_INITIAL_DELAY = 2
PROBE_PERIOD = 5


UploadSettings = WorkerImage


@dataclass(frozen=True, kw_only=True)
class UploadPodArgs:
    """What a pod is made from besides the claim (CDI's UploadPodArgs)."""

    name: str
    client_name: str
    ciphers: list[str]
    min_tls_version: str
    deadline: datetime.datetime | None
    scratch: str | None


def upload_pod_name(pvc: Mapping[str, Any]) -> str:
    """The recorded pod name, else CDI's (the legacy ``cdi-upload-<claim>`` when short enough)."""
    recorded = meta.annotations_of(pvc).get(Annotation.UPLOAD_POD_NAME)
    return recorded if recorded else naming.upload_resource_name(meta.name(pvc))


def service_name_of(pod_name: str) -> str:
    return naming.label_name(pod_name)


def upload_scratch_name(pvc: Mapping[str, Any]) -> str:
    return scratch_claim_name(pvc)


def _labels(**extra: str) -> dict[str, str]:
    return {
        Label.APP: Label.APP_VALUE,
        Label.COMPONENT: Upload.COMPONENT_VALUE,
        **extra,
        **recommended_labels(),
    }


def upload_pod(pvc: Mapping[str, Any], settings: UploadSettings, caches: Caches, args: UploadPodArgs) -> JSON:
    labels = _labels(**{Upload.SERVICE_LABEL: service_name_of(args.name), Upload.TARGET_LABEL: meta.uid(pvc)})
    return worker_pod(
        pvc,
        caches,
        name=args.name,
        labels=labels,
        annotations={Upload.POD_CREATED_BY_UPLOAD: "yes", **allowed_annotations(pvc)},
        container=_container(pvc, settings, caches, args),
        volumes=_volumes(pvc, args),
    )


def _container(pvc: Mapping[str, Any], settings: UploadSettings, caches: Caches, args: UploadPodArgs) -> JSON:
    spec = pvc.get("spec") or {}
    size = meta.storage_request(spec)
    preallocation = bool_text(meta.annotations_of(pvc).get(Annotation.PREALLOCATION_REQUESTED))
    values = [
        (TLS_KEY_FILE_ENV, Upload.SERVER_KEY_FILE),
        (TLS_CERT_FILE_ENV, Upload.SERVER_CERT_FILE),
        (CLIENT_CERT_FILE_ENV, Upload.CLIENT_CA_FILE),
        (ImporterEnv.FILESYSTEM_OVERHEAD, caches.claim_overhead(spec)),
        (Upload.IMAGE_SIZE_ENV, str(Quantity(size)) if size is not None else ""),
        (Upload.CLIENT_NAME_ENV, args.client_name),
        (ImporterEnv.PREALLOCATION, preallocation),
        (TLS_CIPHERS_ENV, ",".join(args.ciphers)),
        (TLS_MIN_VERSION_ENV, args.min_tls_version),
    ]
    if args.deadline is not None:
        values.append((Upload.DEADLINE_ENV, _rfc3339(args.deadline)))
    container = worker_container(Upload.CONTAINER, settings)
    container |= {
        "readinessProbe": {
            "httpGet": {"path": Upload.HEALTHZ, "port": Upload.SERVER_PORT, "scheme": "HTTPS"},
            "initialDelaySeconds": PROBE_INITIAL_DELAY,
            "periodSeconds": PROBE_PERIOD,
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    mounts: list[JSON] = [{"name": CERT_VOLUME, "mountPath": Upload.CERT_MOUNT}]
    if meta.volume_mode(spec) == meta.BLOCK:
        container["volumeDevices"] = [{"name": DATA_VOLUME, "devicePath": ImporterPaths.BLOCK_DEVICE}]
        values.append((Upload.DESTINATION_ENV, ImporterPaths.BLOCK_DEVICE))
    else:
        mounts.append({"name": DATA_VOLUME, "mountPath": ImporterPaths.DATA_DIR})
    if args.scratch is not None:
        mounts.append({"name": SCRATCH_VOLUME, "mountPath": ImporterPaths.SCRATCH_DIR})
    container["env"] = [{"name": name, "value": value} for name, value in values]
    container["volumeMounts"] = mounts
    return container


def _volumes(pvc: Mapping[str, Any], args: UploadPodArgs) -> list[JSON]:
    volumes: list[JSON] = [
        {"name": CERT_VOLUME, "secret": {"secretName": args.name}},
        claim_volume(DATA_VOLUME, meta.name(pvc)),
    ]
    if args.scratch is not None:
        volumes.append(claim_volume(SCRATCH_VOLUME, args.scratch))
    return volumes


def _rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cert_secret(pod: Mapping[str, Any], tls: ServerTLS) -> JSON:
    """The pod's TLS Secret (named as the pod, owned by it: it goes when the pod goes)."""
    data = {"tls.key": tls.key_pem, "tls.crt": tls.cert_pem, "ca.crt": tls.client_ca_pem}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": meta.name(pod),
            "namespace": meta.namespace(pod),
            "labels": _labels(),
            "annotations": {Upload.POD_CREATED_BY_UPLOAD: "yes"},
            "ownerReferences": [meta.owner_reference(pod, "v1", "Pod")],
        },
        "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
    }


def upload_service(name: str, pvc: Mapping[str, Any]) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": meta.namespace(pvc),
            "labels": _labels(),
            "annotations": {Upload.POD_CREATED_BY_UPLOAD: "yes"},
            "ownerReferences": [meta.owner_reference(pvc, "v1", "PersistentVolumeClaim")],
        },
        "spec": {
            "ports": [{"protocol": "TCP", "port": SERVICE_PORT, "targetPort": Upload.SERVER_PORT}],
            "selector": {Upload.SERVICE_LABEL: name},
        },
    }
