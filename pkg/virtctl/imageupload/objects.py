"""The objects ``virtctl image-upload`` creates, as KubeVirt's virtctl builds them: an upload DataVolume
(``spec.source.upload``, ``spec.storage``), an upload PVC (annotated as an upload target), the
UploadTokenRequest, and the DataSource that ``--datasource`` points at the volume."""

from __future__ import annotations

from typing import Any

from kubevirt.client import JSON, PERSISTENT_VOLUME_CLAIMS
from kubevirt.client.resources import DATA_SOURCES, DATA_VOLUMES, Resource
from kubevirt.virtctl.imageupload.flags import (
    VOLUME_MODE_BLOCK,
    VOLUME_MODE_FILESYSTEM,
    UploadError,
    UploadInfo,
)
from kubevirt_api.cdi.constants import (
    CONTENT_TYPE_ARCHIVE,
    CONTENT_TYPE_KUBEVIRT,
    UPLOAD_GROUP,
    VERSION,
    Annotation,
    Label,
)
from kubevirt_api.cdi.v1beta1 import DataSource, DataVolume
from kubevirt_api.instancetype.constants import (
    DEFAULT_INSTANCETYPE_KIND_LABEL,
    DEFAULT_INSTANCETYPE_LABEL,
    DEFAULT_PREFERENCE_KIND_LABEL,
    DEFAULT_PREFERENCE_LABEL,
)
from kubevirt_api.k8s.core_v1 import PersistentVolumeClaimSpec
from kubevirt_api.resource import Quantity, QuantityError

UPLOAD_TOKEN_REQUESTS = Resource(
    UPLOAD_GROUP, VERSION, "uploadtokenrequests", "UploadTokenRequest", namespaced=True
)
TOKEN_REQUEST_NAME = "token-for-virtctl"
READ_ONLY_MANY = "ReadOnlyMany"
READ_WRITE_ONCE = "ReadWriteOnce"
READ_ONLY_REFUSED = (
    "cannot upload to a readonly volume, use either ReadWriteOnce or ReadWriteMany if supported"
)
_VOLUME_MODES = {VOLUME_MODE_BLOCK: "Block", VOLUME_MODE_FILESYSTEM: "Filesystem"}


def size_quantity(info: UploadInfo) -> Quantity:
    try:
        return Quantity(info.size)
    except QuantityError as err:
        raise UploadError(f"validation failed for size={info.size}: {err}") from None


def content_type(info: UploadInfo) -> str:
    return CONTENT_TYPE_ARCHIVE if info.archive_upload else CONTENT_TYPE_KUBEVIRT


def with_default_instancetype_labels(info: UploadInfo, labels: dict[str, str] | None) -> dict[str, str]:
    """``labels`` plus those naming the default instance type and preference that were given."""
    merged = dict(labels or {})
    for label, value in (
        (DEFAULT_INSTANCETYPE_LABEL, info.default_instancetype),
        (DEFAULT_INSTANCETYPE_KIND_LABEL, info.default_instancetype_kind),
        (DEFAULT_PREFERENCE_LABEL, info.default_preference),
        (DEFAULT_PREFERENCE_KIND_LABEL, info.default_preference_kind),
    ):
        if value:
            merged[label] = value
    return merged


def _metadata(info: UploadInfo, annotations: dict[str, str], labels: dict[str, str]) -> JSON:
    """Go leaves empty maps out (``omitempty``)."""
    metadata: JSON = {"name": info.name, "namespace": info.namespace}
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    return metadata


def storage_spec(info: UploadInfo) -> JSON:
    """The DataVolume's ``spec.storage``: size, and class, access mode and volume mode when given."""
    quantity = size_quantity(info)
    spec: JSON = {"resources": {"requests": {"storage": str(quantity)}}}
    if info.storage_class:
        spec["storageClassName"] = info.storage_class
    if info.access_mode:
        if info.access_mode == READ_ONLY_MANY:
            raise UploadError(READ_ONLY_REFUSED)
        spec["accessModes"] = [info.access_mode]
    if info.volume_mode in _VOLUME_MODES:
        spec["volumeMode"] = _VOLUME_MODES[info.volume_mode]
    return spec


def data_volume_body(info: UploadInfo, storage: JSON) -> JSON:
    annotations = {Annotation.IMMEDIATE_BINDING: ""} if info.force_bind else {}
    body = {
        "apiVersion": DATA_VOLUMES.api_version,
        "kind": DATA_VOLUMES.kind,
        "metadata": _metadata(info, annotations, with_default_instancetype_labels(info, None)),
        "spec": {"source": {"upload": {}}, "contentType": content_type(info), "storage": storage},
    }
    return DataVolume.from_dict(body).to_dict()


def pvc_body(info: UploadInfo, quantity: Quantity) -> JSON:
    """KubeVirt's ``RenderPVC`` (ReadWriteOnce unless told otherwise) with the upload annotations and the
    label that lets CDI's webhook apply the storage profile."""
    spec: dict[str, Any] = {
        "resources": {"requests": {"storage": str(quantity)}},
        "accessModes": [info.access_mode or READ_WRITE_ONCE],
    }
    if info.storage_class:
        spec["storageClassName"] = info.storage_class
    if info.volume_mode in _VOLUME_MODES:
        spec["volumeMode"] = _VOLUME_MODES[info.volume_mode]
    annotations = {Annotation.UPLOAD_TARGET: "", Annotation.CONTENT_TYPE: content_type(info)}
    if info.force_bind:
        annotations[Annotation.IMMEDIATE_BINDING] = ""
    labels = with_default_instancetype_labels(info, {Label.APPLY_STORAGE_PROFILE: "true"})
    return {
        "apiVersion": PERSISTENT_VOLUME_CLAIMS.api_version,
        "kind": PERSISTENT_VOLUME_CLAIMS.kind,
        "metadata": _metadata(info, annotations, labels),
        "spec": PersistentVolumeClaimSpec.from_dict(spec).to_dict(),
    }


def token_request_body(info: UploadInfo) -> JSON:
    return {
        "apiVersion": UPLOAD_TOKEN_REQUESTS.api_version,
        "kind": UPLOAD_TOKEN_REQUESTS.kind,
        "metadata": {"name": TOKEN_REQUEST_NAME},
        "spec": {"pvcName": info.name},
    }


def data_source_body(info: UploadInfo) -> JSON:
    body = {
        "apiVersion": DATA_SOURCES.api_version,
        "kind": DATA_SOURCES.kind,
        "metadata": _metadata(info, {}, with_default_instancetype_labels(info, None)),
        "spec": {"source": {"pvc": {"name": info.name, "namespace": info.namespace}}},
    }
    return DataSource.from_dict(body).to_dict()


def data_source_patch(info: UploadInfo, existing: JSON) -> list[JSON]:
    """The JSON patch that relabels an existing DataSource and points it at the volume."""
    labels = with_default_instancetype_labels(info, (existing.get("metadata") or {}).get("labels"))
    return [
        {"op": "replace", "path": "/metadata/labels", "value": labels},
        {
            "op": "replace",
            "path": "/spec/source/pvc",
            "value": {"name": info.name, "namespace": info.namespace},
        },
    ]
