"""The volume the image goes to: an existing PVC checked (and marked) for upload, or a new DataVolume or
PVC, as KubeVirt's virtctl decides.

An existing PVC is used when it was not written already, and, unless ``--no-create``, only if it is an
upload target. For ``dv`` the PVC must belong to a DataVolume; when CDI populates it through a PVC prime,
the upload goes to the prime.
"""

from __future__ import annotations

from kubevirt.client import JSON, PERSISTENT_VOLUME_CLAIMS, ApiError, KubeApi, NotFoundError
from kubevirt.client.resources import DATA_VOLUMES, STORAGE_CLASSES
from kubevirt.virtctl.imageupload.flags import UploadError, UploadInfo
from kubevirt.virtctl.imageupload.objects import (
    READ_ONLY_MANY,
    READ_ONLY_REFUSED,
    data_volume_body,
    pvc_body,
    size_quantity,
    storage_spec,
)
from kubevirt.virtctl.vmexport.printer import Printer
from kubevirt_api.cdi.constants import CONTENT_TYPE_ARCHIVE, Annotation

# CDI's name of the annotation on a populated PVC naming its PVC prime (not in the shared constants).
PVC_PRIME_NAME = "cdi.kubevirt.io/storage.populator.pvcPrime"
POD_SUCCEEDED = "Succeeded"
CLAIM_BOUND = "Bound"


def _annotations(obj: JSON) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _namespace(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def find_upload_pvc(api: KubeApi, info: UploadInfo, printer: Printer) -> JSON:
    """The PVC to upload to; NotFoundError (only) when there is none of that name."""
    try:
        pvc = api.get(PERSISTENT_VOLUME_CLAIMS, info.namespace, info.name)
    except ApiError:
        printer.say(f"PVC {info.namespace}/{info.name} not found \n")
        raise
    if not info.create_pvc:
        pvc = _data_volume_claim(api, info, pvc)
    annotations = _annotations(pvc)
    if annotations.get(Annotation.POD_PHASE) == POD_SUCCEEDED:
        raise UploadError(f"PVC {info.name} already successfully imported/cloned/updated")
    if not info.no_create and Annotation.UPLOAD_TARGET not in annotations:
        raise UploadError(f"PVC {info.name} not available for upload")
    if info.archive_upload and annotations.get(Annotation.CONTENT_TYPE) != CONTENT_TYPE_ARCHIVE:
        raise UploadError(f"PVC {info.name} doesn't have archive contentType annotation")
    return pvc


def _data_volume_claim(api: KubeApi, info: UploadInfo, pvc: JSON) -> JSON:
    """The claim the DataVolume's upload really goes to: the PVC, or its PVC prime with populators."""
    namespace = _namespace(pvc)
    try:
        dv = api.get(DATA_VOLUMES, namespace, info.name)
    except NotFoundError:
        annotations = _annotations(pvc)
        collected = (
            annotations.get(Annotation.DELETE_AFTER_COMPLETION) == "true"
            and annotations.get(Annotation.POD_PHASE) == POD_SUCCEEDED
        )
        if collected:
            raise UploadError(
                f"DataVolume already garbage-collected: Assuming PVC {namespace}/{info.name} "
                "is successfully populated"
            ) from None
        raise UploadError(
            f"No DataVolume is associated with the existing PVC {namespace}/{info.name}"
        ) from None
    if _annotations(dv).get(Annotation.USE_POPULATOR) != "true":
        return pvc
    if (pvc.get("status") or {}).get("phase") == CLAIM_BOUND:
        raise UploadError(f"PVC {info.name} already successfully populated")
    prime = _annotations(pvc).get(PVC_PRIME_NAME)
    if prime is None:
        raise UploadError(f"Unable to get PVC Prime name from PVC {namespace}/{info.name}")
    dv_namespace = _namespace(dv)
    try:
        return api.get(PERSISTENT_VOLUME_CLAIMS, dv_namespace, prime)
    except ApiError:
        raise UploadError(f"Unable to get PVC Prime {dv_namespace}/{info.name}") from None


def mark_for_upload(api: KubeApi, pvc: JSON) -> JSON:
    """The PVC, annotated as an upload target if it was not one yet."""
    if Annotation.UPLOAD_TARGET in _annotations(pvc):
        return pvc
    metadata = pvc.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), Annotation.UPLOAD_TARGET: ""}
    return api.update(PERSISTENT_VOLUME_CLAIMS, _namespace(pvc) or None, pvc)


def _check_storage_class(api: KubeApi, info: UploadInfo) -> None:
    """A storage class that was named must exist before anything is created."""
    if info.storage_class:
        api.get(STORAGE_CLASSES, None, info.storage_class)


def create_data_volume(api: KubeApi, info: UploadInfo) -> JSON:
    storage = storage_spec(info)
    _check_storage_class(api, info)
    return api.create(DATA_VOLUMES, info.namespace, data_volume_body(info, storage))


def create_pvc(api: KubeApi, info: UploadInfo) -> JSON:
    if info.access_mode == READ_ONLY_MANY:
        raise UploadError(READ_ONLY_REFUSED)
    _check_storage_class(api, info)
    quantity = size_quantity(info)
    return api.create(PERSISTENT_VOLUME_CLAIMS, info.namespace, pvc_body(info, quantity))


def prepare_target(api: KubeApi, info: UploadInfo, printer: Printer) -> None:
    """Creates the DataVolume or PVC, or checks and marks the existing one; says which."""
    try:
        pvc = find_upload_pvc(api, info, printer)
    except NotFoundError:
        if info.no_create:
            raise
        if not info.size:
            raise UploadError("when creating a resource, the size must be specified") from None
        created = create_pvc(api, info) if info.create_pvc else create_data_volume(api, info)
        kind = "PersistentVolumeClaim" if info.create_pvc else "DataVolume"
        printer.say(f"{kind} {_namespace(created)}/{_name(created)} created\n")
        return
    pvc = mark_for_upload(api, pvc)
    printer.say(f"Using existing PVC {info.namespace}/{_name(pvc)}\n")
