"""What an export creates (KubeVirt v1.6's layout): its Service, its token Secret and the export server's
Pod, with one volume per claim, the environment :mod:`kubevirt.export.paths` defines, the certificate and
token Secrets mounted, and a readiness probe on the server's ``/exportready``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from kubevirt.admission.k8s_names import random_suffix
from kubevirt.export import paths
from kubevirt.export.token import TOKEN_SECRET_KEY
from kubevirt.service.certs import CERT_KEY, KEY_KEY
from kubevirt.virt_controller.services.exporter_pod import EXPORTER_APP
from kubevirt.virt_controller.watch.common import format_time
from kubevirt.virt_controller.watch.snapshot.common import owner_ref
from kubevirt_api.core.v1.constants import APP_LABEL
from kubevirt_api.view import JSON

from .certs import CERTIFICATES_VOLUME, CertParams
from .names import (
    ANN_CERT_PARAMS,
    EXPORT_API_VERSION,
    EXPORT_KIND,
    EXPORT_SERVICE_LABEL,
    export_label_value,
    export_service_name,
)
from .volumes import is_block

TOKEN_VOLUME: Final = "token"
MANIFEST_VOLUME: Final = "manifest-data"
CERT_MOUNT_PATH: Final = "/cert"
TOKEN_MOUNT_PATH: Final = "/token"
SERVER_PORT: Final = 8443
SERVICE_PORT: Final = 443
# The pods' group: qemu's (107) in KubeVirt's images, so the server can read the disk images.
KVM_GROUP: Final = 107


def _meta(obj: Mapping[str, Any]) -> JSON:
    return obj.get("metadata") or {}


def export_owner(export: Mapping[str, Any]) -> JSON:
    return owner_ref(EXPORT_API_VERSION, EXPORT_KIND, export)


def service(export: Mapping[str, Any]) -> JSON:
    """``virt-export-<name>``: port 443 to the server's 8443, selecting the export's pod."""
    meta = _meta(export)
    metadata: JSON = {
        "name": export_service_name(str(meta["name"])),
        "namespace": meta.get("namespace"),
        "ownerReferences": [export_owner(export)],
        "labels": {APP_LABEL: EXPORTER_APP, **(meta.get("labels") or {})},
    }
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "ports": [{"protocol": "TCP", "port": SERVICE_PORT, "targetPort": SERVER_PORT}],
            "selector": {EXPORT_SERVICE_LABEL: export_label_value(str(meta["name"]))},
        },
    }


def token_secret(export: Mapping[str, Any], name: str, token: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": _meta(export).get("namespace"),
            "ownerReferences": [export_owner(export)],
        },
        "type": "Opaque",
        "data": {TOKEN_SECRET_KEY: base64.b64encode(token.encode()).decode()},
    }


def _env(values: Mapping[str, str]) -> list[JSON]:
    return [{"name": name, "value": value} for name, value in values.items()]


def _secret_volume(name: str, secret_name: str) -> JSON:
    return {"name": name, "secret": {"secretName": secret_name}}


def exporter_pod(
    base: JSON,
    export: Mapping[str, Any],
    pvcs: Sequence[Mapping[str, Any]],
    *,
    params: CertParams,
    raw: Callable[[Mapping[str, Any]], bool],
    deadline: datetime,
) -> JSON:
    """The template service's pod (``base``) made the server of ``pvcs``: a block claim is a device at
    ``/dev/export-volumes/<volume>``, any other claim a read-only mount at ``/export-volumes/<volume>``;
    ``raw`` tells which claims hold disk images. The server stops at ``deadline`` (renewal or TTL)."""
    meta = _meta(export)
    pod = dict(base)
    pod["metadata"] = {
        **base["metadata"],
        "labels": {EXPORT_SERVICE_LABEL: export_label_value(str(meta["name"])), **(meta.get("labels") or {})},
        "annotations": {ANN_CERT_PARAMS: params.serialize(), **(meta.get("annotations") or {})},
    }
    spec = {
        **base["spec"],
        "securityContext": {
            "runAsNonRoot": True,
            "fsGroup": KVM_GROUP,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    container = dict(spec["containers"][0])
    env, mounts, devices, volumes = list(container.get("env") or ()), [], [], []
    for index, pvc in enumerate(pvcs):
        claim = str(_meta(pvc)["name"])
        volume = paths.pod_volume_name(claim)
        block = is_block(pvc)
        mount_path = paths.mount_path(claim, block=block)
        if block:
            devices.append({"name": volume, "devicePath": mount_path})
        else:
            mounts.append({"name": volume, "readOnly": True, "mountPath": mount_path})
        volumes.append({"name": volume, "persistentVolumeClaim": {"claimName": claim}})
        env += _env(paths.volume_env(index, mount_path, claim, raw=raw(pvc)))
    env += _env(
        {
            paths.CERT_FILE_ENV: f"{CERT_MOUNT_PATH}/{CERT_KEY}",
            paths.KEY_FILE_ENV: f"{CERT_MOUNT_PATH}/{KEY_KEY}",
            paths.TOKEN_FILE_ENV: f"{TOKEN_MOUNT_PATH}/{TOKEN_SECRET_KEY}",
            paths.DEADLINE_ENV: format_time(deadline),
            paths.VM_DEFINITION_ENV: paths.MANIFESTS_PATH,
            paths.SECRET_DEFINITION_ENV: paths.SECRET_MANIFEST_PATH,
        }
    )
    token_ref = ((export.get("status") or {}).get("tokenSecretRef")) or ""
    volumes += [
        _secret_volume(CERTIFICATES_VOLUME, f"secret-{random_suffix(10)}"),
        _secret_volume(TOKEN_VOLUME, token_ref),
    ]
    mounts += [
        {"name": CERTIFICATES_VOLUME, "mountPath": CERT_MOUNT_PATH},
        {"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT_PATH},
    ]
    container["env"] = env
    container["volumeMounts"] = mounts
    if devices:
        container["volumeDevices"] = devices
    container["readinessProbe"] = {
        "httpGet": {"scheme": "HTTPS", "path": paths.READINESS_PATH, "port": SERVER_PORT},
        "initialDelaySeconds": 5,
        "periodSeconds": 5,
    }
    spec["containers"] = [container, *spec["containers"][1:]]
    spec["volumes"] = [*(spec.get("volumes") or ()), *volumes]
    pod["spec"] = spec
    return pod


def add_manifest_volume(pod: JSON, config_map: str) -> None:
    """Mounts the VM's manifests (a ConfigMap) where the server reads them."""
    container = pod["spec"]["containers"][0]
    container["volumeMounts"] = [
        *container.get("volumeMounts", ()),
        {"name": MANIFEST_VOLUME, "mountPath": paths.MANIFEST_MOUNT_PATH},
    ]
    pod["spec"]["volumes"] = [
        *pod["spec"].get("volumes", ()),
        {"name": MANIFEST_VOLUME, "configMap": {"name": config_map}},
    ]
