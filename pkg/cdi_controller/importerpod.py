"""The importer pod of a claim and its scratch claim, as CDI's import controller makes them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from kubevirt.cdi import sizes
from kubevirt.cdi.naming import resource_name
from kubevirt.cdi_controller import meta, nodepull
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.render import recommended_labels
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
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.cdi.constants import Annotation, ImporterEnv, ImporterExtraEnv, ImporterPaths, Label
from kubevirt_api.resource import Quantity
from kubevirt_api.view import JSON

CERT_VOLUME = "cdi-cert-vol"
SECRET_EXTRA_HEADERS_VOLUME = "cdi-secret-extra-headers-vol-%d"
IMPORTER_COMPONENT = "importer"
SOURCES = {
    cdi.SOURCE_HTTP,
    cdi.SOURCE_S3,
    cdi.SOURCE_GCS,
    "glance",
    cdi.SOURCE_NONE,
    cdi.SOURCE_REGISTRY,
    cdi.SOURCE_IMAGEIO,
    cdi.SOURCE_VDDK,
}


class ImporterPodError(Exception):
    """The claim's annotations do not describe an import (e.g. no endpoint)."""


ImporterSettings = WorkerImage


def source_of(pvc: Mapping[str, Any]) -> str:
    """The import source annotation; CDI takes anything unknown for http."""
    source = meta.annotations_of(pvc).get(Annotation.IMPORT_SOURCE, "")
    return source if source in SOURCES else cdi.SOURCE_HTTP


def content_type_of(pvc: Mapping[str, Any]) -> str:
    value = meta.annotations_of(pvc).get(Annotation.CONTENT_TYPE)
    return (
        value if value in (cdi.CONTENT_TYPE_KUBEVIRT, cdi.CONTENT_TYPE_ARCHIVE) else cdi.CONTENT_TYPE_KUBEVIRT
    )


def importer_pod_name(pvc: Mapping[str, Any]) -> str:
    recorded = meta.annotations_of(pvc).get(Annotation.IMPORT_POD_NAME)
    return recorded if recorded else new_importer_pod_name(pvc)


def new_importer_pod_name(pvc: Mapping[str, Any]) -> str:
    return resource_name(cdi.IMPORTER_CONTAINER, meta.name(pvc))


def scratch_claim_name(pvc: Mapping[str, Any]) -> str:
    return resource_name(meta.name(pvc), cdi.SCRATCH_SUFFIX.lstrip("-"))


def requires_scratch(pvc: Mapping[str, Any]) -> bool:
    """Archives and registry images pulled by the importer need scratch space up front; other sources
    (a node-pulled image is read over HTTP) once the importer asked for it (the requires-scratch
    annotation)."""
    annotations = meta.annotations_of(pvc)
    registry_by_pod = source_of(pvc) == cdi.SOURCE_REGISTRY and not nodepull.is_node_pull(pvc)
    required = (
        content_type_of(pvc) == cdi.CONTENT_TYPE_ARCHIVE or source_of(pvc) == "glance" or registry_by_pod
    )
    return required or annotations.get(Annotation.REQUIRES_SCRATCH, "").lower() in ("true", "1", "t")


def importer_pod(
    pvc: Mapping[str, Any], settings: ImporterSettings, caches: Caches, *, scratch: str | None
) -> JSON:
    env = _import_environment(pvc, caches)
    node_pull = nodepull.is_node_pull(pvc)
    if node_pull:
        replaced = nodepull.environment()
        env = [
            entry | {"value": replaced[entry["name"]]} if entry["name"] in replaced else entry
            for entry in env
        ]
    labels = {
        Label.APP: Label.APP_VALUE,
        Label.COMPONENT: IMPORTER_COMPONENT,
        cdi.PROMETHEUS_LABEL: "true",
        **recommended_labels(),
        **meta.labels_of(pvc),
    }
    container = _container(pvc, settings, env, scratch)
    volumes = _volumes(pvc, scratch)
    if node_pull:
        container.setdefault("volumeMounts", []).append(nodepull.shared_mount())
        volumes.append(nodepull.shared_volume())
    pod = worker_pod(
        pvc,
        caches,
        name=importer_pod_name(pvc),
        labels=labels,
        annotations={cdi.POD_CREATED_BY_CONTROLLER: "yes", **allowed_annotations(pvc)},
        container=container,
        volumes=volumes,
    )
    if node_pull:
        _add_node_pull_containers(pod, pvc, settings)
    return pod


def _add_node_pull_containers(pod: JSON, pvc: Mapping[str, Any], settings: ImporterSettings) -> None:
    """The image's server beside the importer, and the init container giving it its program; with the
    importer's resources and restrictions."""
    spec = pod["spec"]
    importer = spec["containers"][0]
    extra = [nodepull.server_container(pvc, settings)]
    init = [nodepull.init_container(settings)]
    for container in (*extra, *init):
        for key in ("resources", "securityContext"):
            if key in importer:
                container[key] = copy.deepcopy(importer[key])
    spec["containers"].extend(extra)
    spec["initContainers"] = init


def _container(
    pvc: Mapping[str, Any], settings: ImporterSettings, env: list[JSON], scratch: str | None
) -> JSON:
    annotations = meta.annotations_of(pvc)
    container = worker_container(cdi.IMPORTER_CONTAINER, settings)
    container |= {
        "env": env,
        "ports": [{"name": cdi.METRICS_PORT_NAME, "containerPort": cdi.METRICS_PORT, "protocol": "TCP"}],
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    mounts: list[JSON] = []
    if meta.volume_mode(pvc.get("spec") or {}) == meta.BLOCK:
        container["volumeDevices"] = [{"name": DATA_VOLUME, "devicePath": ImporterPaths.BLOCK_DEVICE}]
    else:
        mounts.append({"name": DATA_VOLUME, "mountPath": ImporterPaths.DATA_DIR})
    if scratch is not None:
        mounts.append({"name": SCRATCH_VOLUME, "mountPath": ImporterPaths.SCRATCH_DIR})
    if annotations.get(Annotation.IMPORT_CERT_CONFIG_MAP) and source_of(pvc) != cdi.SOURCE_NONE:
        mounts.append({"name": CERT_VOLUME, "mountPath": ImporterPaths.CERT_DIR})
    for index, _ in enumerate(_secret_extra_headers(pvc)):
        mounts.append(
            {
                "name": SECRET_EXTRA_HEADERS_VOLUME % index,
                "mountPath": f"{ImporterPaths.EXTRA_HEADERS_DIR}/{index}",
            }
        )
    if mounts:
        container["volumeMounts"] = mounts
    return container


def _volumes(pvc: Mapping[str, Any], scratch: str | None) -> list[JSON]:
    volumes: list[JSON] = [claim_volume(DATA_VOLUME, meta.name(pvc))]
    if scratch is not None:
        volumes.append(claim_volume(SCRATCH_VOLUME, scratch))
    cert_config_map = meta.annotations_of(pvc).get(Annotation.IMPORT_CERT_CONFIG_MAP)
    if cert_config_map and source_of(pvc) != cdi.SOURCE_NONE:
        volumes.append({"name": CERT_VOLUME, "configMap": {"name": cert_config_map}})
    for index, secret in enumerate(_secret_extra_headers(pvc)):
        volumes.append({"name": SECRET_EXTRA_HEADERS_VOLUME % index, "secret": {"secretName": secret}})
    return volumes


def _indexed(annotations: Mapping[str, str], prefix: str) -> list[str]:
    found = []
    for key, value in annotations.items():
        if key.startswith(prefix):
            suffix = key[len(prefix) :]
            found.append((int(suffix) if suffix.isdigit() else 1 << 30, key, value))
    return [value for _, _, value in sorted(found)]


def _secret_extra_headers(pvc: Mapping[str, Any]) -> list[str]:
    if source_of(pvc) == cdi.SOURCE_NONE:
        return []
    return _indexed(meta.annotations_of(pvc), Annotation.IMPORT_SECRET_EXTRA_HEADERS_PREFIX)


def _import_environment(pvc: Mapping[str, Any], caches: Caches) -> list[JSON]:
    annotations = meta.annotations_of(pvc)
    source = source_of(pvc)
    spec = pvc.get("spec") or {}
    endpoint = secret = cert_config_map = architecture = ""
    insecure = False
    proxy = caches.config_status().get("importProxy") or {}
    http_proxy = https_proxy = no_proxy = ""
    if source != cdi.SOURCE_NONE:
        endpoint = annotations.get(Annotation.IMPORT_ENDPOINT, "")
        if not endpoint:
            verb = "missing" if Annotation.IMPORT_ENDPOINT not in annotations else "empty"
            raise ImporterPodError(
                f'annotation "{Annotation.IMPORT_ENDPOINT}" in pvc "{meta.key(pvc)}" is {verb}'
            )
        secret = annotations.get(Annotation.IMPORT_SECRET, "")
        cert_config_map = annotations.get(Annotation.IMPORT_CERT_CONFIG_MAP, "")
        insecure = _insecure_registry(endpoint, caches)
        architecture = annotations.get(cdi.IMPORT_REGISTRY_IMAGE_ARCHITECTURE, "")
        http_proxy = str(proxy.get("HTTPProxy") or "")
        https_proxy = str(proxy.get("HTTPSProxy") or "")
        no_proxy = str(proxy.get("noProxy") or "")
    size = meta.storage_request(spec)
    if size is None:
        raise ImporterPodError(f'storage request is missing in pvc "{meta.key(pvc)}"')
    pull_method = (
        annotations.get(Annotation.IMPORT_REGISTRY_METHOD, "") if source == cdi.SOURCE_REGISTRY else ""
    )
    values = [
        (ImporterEnv.SOURCE, source),
        (ImporterEnv.ENDPOINT, endpoint),
        (ImporterEnv.CONTENT_TYPE, content_type_of(pvc)),
        (ImporterEnv.IMAGE_SIZE, str(Quantity(size))),
        (ImporterEnv.OWNER_UID, owner_uid(pvc)),
        (ImporterEnv.FILESYSTEM_OVERHEAD, caches.claim_overhead(spec)),
        (ImporterEnv.INSECURE_TLS, "true" if insecure else "false"),
        (ImporterExtraEnv.DISK_ID, ""),
        (ImporterExtraEnv.UUID, ""),
        (ImporterEnv.PULL_METHOD, pull_method),
        (ImporterExtraEnv.READY_FILE, ""),
        (ImporterExtraEnv.DONE_FILE, ""),
        (ImporterExtraEnv.BACKING_FILE, ""),
        (ImporterExtraEnv.THUMBPRINT, ""),
        (ImporterExtraEnv.HTTP_PROXY, http_proxy),
        (ImporterExtraEnv.HTTPS_PROXY, https_proxy),
        (ImporterExtraEnv.NO_PROXY, no_proxy),
        (ImporterExtraEnv.CURRENT_CHECKPOINT, ""),
        (ImporterExtraEnv.PREVIOUS_CHECKPOINT, ""),
        (ImporterExtraEnv.FINAL_CHECKPOINT, ""),
        (ImporterEnv.PREALLOCATION, bool_text(annotations.get(Annotation.PREALLOCATION_REQUESTED))),
        (
            ImporterEnv.CACHE_MODE,
            cdi.CACHE_MODE_TRY_NONE if annotations.get(Annotation.REQUIRES_DIRECT_IO) == "true" else "",
        ),
        (ImporterExtraEnv.REGISTRY_IMAGE_ARCHITECTURE, architecture),
    ]
    env: list[JSON] = [{"name": name, "value": value} for name, value in values]
    if secret:
        for name, key in (
            (ImporterEnv.ACCESS_KEY_ID, cdi.SECRET_ACCESS_KEY_ID),
            (ImporterEnv.SECRET_KEY, cdi.SECRET_SECRET_KEY),
        ):
            env.append({"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
    if cert_config_map:
        env.append({"name": ImporterEnv.CERT_DIR, "value": ImporterPaths.CERT_DIR})
    if source != cdi.SOURCE_NONE:
        for index, header in enumerate(_indexed(annotations, Annotation.IMPORT_EXTRA_HEADERS_PREFIX)):
            env.append({"name": f"{ImporterEnv.EXTRA_HEADER_PREFIX}{index}", "value": header})
    return env


def owner_uid(pvc: Mapping[str, Any]) -> str:
    # The DataVolume's uid when it owns the claim: the importer labels its progress with it.
    refs = meta.meta(pvc).get("ownerReferences") or []
    if len(refs) == 1 and refs[0].get("uid"):
        return str(refs[0]["uid"])
    return meta.uid(pvc)


def _insecure_registry(endpoint: str, caches: Caches) -> bool:
    parts = urlsplit(endpoint)
    if parts.scheme != "docker":
        return False
    config = caches.config() or {}
    return parts.netloc in ((config.get("spec") or {}).get("insecureRegistries") or ())


def scratch_claim(pvc: Mapping[str, Any], pod: Mapping[str, Any], caches: Caches) -> JSON:
    """The scratch claim of an importer pod: ReadWriteOnce, owned by the pod, large enough for the
    image the target can hold plus the scratch class's own overhead."""
    spec = pvc.get("spec") or {}
    class_name = caches.config_status().get("scratchSpaceStorageClass") or meta.storage_class_name(spec) or ""
    scratch_spec: JSON = {"accessModes": ["ReadWriteOnce"], "resources": dict(spec.get("resources") or {})}
    if class_name:
        scratch_spec["storageClassName"] = class_name
    target = Quantity(meta.storage_request(spec) or "0").value()
    image = sizes.usable_space(_float(caches.claim_overhead(spec)), target)
    size = sizes.round_up(sizes.required_space(_float(caches.claim_overhead(scratch_spec)), image))
    scratch_spec["resources"] = {
        **scratch_spec["resources"],
        "requests": {
            **(scratch_spec["resources"].get("requests") or {}),
            "storage": str(Quantity.from_int(size)),
        },
    }
    # kubevirt.io annotations go along, CDI's own would start another import on the scratch claim.
    annotations = {
        key: value
        for key, value in meta.annotations_of(pvc).items()
        if "kubevirt.io" in key and "cdi.kubevirt.io" not in key
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": scratch_claim_name(pvc),
            "namespace": meta.namespace(pvc),
            "labels": {Label.APP: Label.APP_VALUE, **recommended_labels(), cdi.VELERO_EXCLUDE: "true"},
            "annotations": annotations,
            "ownerReferences": [meta.owner_reference(pod, "v1", "Pod")],
        },
        "spec": scratch_spec,
    }


def _float(text: str) -> float:
    try:
        return sizes.parse_overhead(text)
    except ValueError:
        return 0.0


def scratch_volume_claim(pod: Mapping[str, Any]) -> str | None:
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if volume.get("name") == SCRATCH_VOLUME:
            return str((volume.get("persistentVolumeClaim") or {}).get("claimName") or "") or None
    return None
