"""A DataVolume's claim: the spec rendered from ``spec.pvc`` or ``spec.storage`` (StorageProfile defaults,
default storage class, filesystem overhead) and the claim object created for it, as CDI renders them."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from typing import Any

from kubevirt.cdi import sizes
from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.caches import Caches
from kubevirt.client import EventSink
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.cdi.constants import Annotation, Label, Reason
from kubevirt_api.resource import Quantity
from kubevirt_api.view import JSON

MISSING_SPEC = "datavolume one of {pvc, storage} field is required"
ARCHIVE_BLOCK = "ContentType Archive cannot have block volumeMode"
NO_STORAGE_CLASS = "PVC spec is missing accessMode and no storageClass to choose profile"
MISSING_SIZE = "PVC Spec is not valid - missing storage size"
TOO_SMALL = "PVC Spec is not valid - storage size should be at least 1MiB"
# The Warning events of a StorageProfile that cannot complete the spec (%s: the class).
NO_MODES_FROM_PROFILE = (
    "Spec is missing accessMode and volumeMode, cannot get access mode from StorageProfile %s"
)
NO_ACCESS_MODE_FROM_PROFILE = "Spec is missing accessMode and cannot get access mode from StorageProfile %s"
DELAYED_ANNOTATIONS = (Annotation.POPULATED_FOR,)


class ClaimNotValid(Exception):  # noqa: N818 (CDI's reason: ErrClaimNotValid)
    """The DataVolume's claim cannot be rendered; ``retry`` is False when only a cluster change (a storage
    class appearing) can help."""

    def __init__(self, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


def content_type(dv: Mapping[str, Any]) -> str:
    value = (dv.get("spec") or {}).get("contentType")
    return (
        value if value in (cdi.CONTENT_TYPE_KUBEVIRT, cdi.CONTENT_TYPE_ARCHIVE) else cdi.CONTENT_TYPE_KUBEVIRT
    )


def render_claim_spec(dv: Mapping[str, Any], caches: Caches, events: EventSink) -> JSON:
    """The spec of the claim to create for ``dv``; ClaimNotValid with CDI's message when it cannot be
    made (the access-mode failures are also a Warning event on the DataVolume, as CDI records them)."""
    spec = dv.get("spec") or {}
    if spec.get("pvc") is not None:
        return copy.deepcopy(dict(spec["pvc"]))
    storage = spec.get("storage")
    if storage is None:
        raise ClaimNotValid(MISSING_SPEC)
    claim = {
        key: copy.deepcopy(storage[key])
        for key in (
            "accessModes",
            "selector",
            "resources",
            "volumeName",
            "storageClassName",
            "volumeMode",
            "dataSource",
            "dataSourceRef",
        )
        if storage.get(key) is not None
    }
    _render_modes_and_class(dv, claim, caches, events)
    _render_size(claim, caches)
    return claim


def _warn(events: EventSink, dv: Mapping[str, Any], message: str) -> None:
    events.event(dv, "Warning", Reason.CLAIM_NOT_VALID, message)


def _render_modes_and_class(dv: Mapping[str, Any], claim: JSON, caches: Caches, events: EventSink) -> None:
    kind = content_type(dv)
    if kind == cdi.CONTENT_TYPE_ARCHIVE:
        if claim.get("volumeMode") == meta.BLOCK:
            _warn(events, dv, ARCHIVE_BLOCK)
            raise ClaimNotValid(ARCHIVE_BLOCK)
        claim["volumeMode"] = meta.FILESYSTEM
    storage_class = caches.storage_class(meta.storage_class_name(claim), kind)
    if storage_class is None:
        if not claim.get("accessModes"):
            _warn(events, dv, NO_STORAGE_CLASS)
            raise ClaimNotValid(NO_STORAGE_CLASS, retry=False)
        return
    class_name = meta.name(storage_class)
    claim["storageClassName"] = class_name
    has_mode, has_access = bool(claim.get("volumeMode")), bool(claim.get("accessModes"))
    if not has_mode and not has_access:
        sets = _claim_property_sets(caches, class_name)
        if not sets or not sets[0].get("accessModes"):
            _warn(events, dv, NO_MODES_FROM_PROFILE % class_name)
            raise ClaimNotValid(f"no accessMode specified in StorageProfile {class_name}")
        claim["accessModes"] = list(sets[0]["accessModes"])
        if sets[0].get("volumeMode"):
            claim["volumeMode"] = sets[0]["volumeMode"]
    elif not has_access:
        matching = [
            cps
            for cps in _claim_property_sets(caches, class_name)
            if cps.get("volumeMode") == claim["volumeMode"] and cps.get("accessModes")
        ]
        if not matching:
            _warn(events, dv, NO_ACCESS_MODE_FROM_PROFILE % class_name)
            raise ClaimNotValid(f"no matching accessMode specified in StorageProfile {class_name}")
        claim["accessModes"] = list(matching[0]["accessModes"])
    elif not has_mode:
        wanted = set(claim["accessModes"])
        for cps in _claim_property_sets(caches, class_name):
            if wanted & set(cps.get("accessModes") or ()) and cps.get("volumeMode"):
                claim["volumeMode"] = cps["volumeMode"]
                break


def _claim_property_sets(caches: Caches, class_name: str) -> list[Mapping[str, Any]]:
    profile = caches.storage_profile(class_name)
    if profile is None:
        raise ClaimNotValid(
            f'cannot get StorageProfile: storageprofiles.cdi.kubevirt.io "{class_name}" not found'
        )
    return list((profile.get("status") or {}).get("claimPropertySets") or [])


def _render_size(claim: JSON, caches: Caches) -> None:
    requested = meta.storage_request(claim)
    if requested is None:
        raise ClaimNotValid(MISSING_SIZE)
    try:
        size = Quantity(requested).value()
    except ValueError as err:
        raise ClaimNotValid(f"PVC Spec is not valid - storage size {requested!r} is not a quantity") from err
    if size < sizes.MINIMUM_SIZE:
        raise ClaimNotValid(TOO_SMALL)
    if meta.volume_mode(claim) == meta.FILESYSTEM:
        overhead = _overhead(caches.claim_overhead(claim))
        size = sizes.required_space(overhead, size)
    class_name = meta.storage_class_name(claim)
    profile = caches.storage_profile(class_name) if class_name else None
    minimum = meta.annotations_of(profile).get(cdi.MINIMUM_SUPPORTED_PVC_SIZE) if profile else None
    if minimum:
        with contextlib.suppress(ValueError):  # CDI ignores a minimum it cannot read
            size = max(size, Quantity(minimum).value())
    claim.setdefault("resources", {}).setdefault("requests", {})["storage"] = str(Quantity.from_int(size))


def _overhead(text: str) -> float:
    try:
        return sizes.parse_overhead(text)
    except ValueError:
        return 0.0  # CDI parses the percentage leniently: what it cannot read costs nothing


def source_annotations(dv: Mapping[str, Any]) -> dict[str, str]:
    """The source annotations of the claim (CDI's Update*Annotations: the import source, or the upload
    target mark); empty for other sources."""
    source = (dv.get("spec") or {}).get("source") or {}
    if (http := source.get("http")) is not None:
        return _http_annotations(http)
    if (registry := source.get("registry")) is not None:
        return _registry_annotations(registry)
    if source.get("blank") is not None:
        return {Annotation.IMPORT_SOURCE: cdi.SOURCE_NONE}
    if source.get("upload") is not None:
        return {Annotation.UPLOAD_TARGET: ""}
    return {}


def _http_annotations(http: Mapping[str, Any]) -> dict[str, str]:
    result = {
        Annotation.IMPORT_ENDPOINT: str(http.get("url") or ""),
        Annotation.IMPORT_SOURCE: cdi.SOURCE_HTTP,
    }
    if http.get("secretRef"):
        result[Annotation.IMPORT_SECRET] = str(http["secretRef"])
    if http.get("certConfigMap"):
        result[Annotation.IMPORT_CERT_CONFIG_MAP] = str(http["certConfigMap"])
    for index, header in enumerate(http.get("extraHeaders") or ()):
        result[f"{Annotation.IMPORT_EXTRA_HEADERS_PREFIX}{index}"] = str(header)
    for index, header in enumerate(http.get("secretExtraHeaders") or ()):
        result[f"{Annotation.IMPORT_SECRET_EXTRA_HEADERS_PREFIX}{index}"] = str(header)
    return result


def _registry_annotations(registry: Mapping[str, Any]) -> dict[str, str]:
    result = {Annotation.IMPORT_SOURCE: cdi.SOURCE_REGISTRY}
    if registry.get("pullMethod"):
        result[Annotation.IMPORT_REGISTRY_METHOD] = str(registry["pullMethod"])
    if registry.get("url"):
        result[Annotation.IMPORT_ENDPOINT] = str(registry["url"])
    elif registry.get("imageStream"):
        result[Annotation.IMPORT_ENDPOINT] = str(registry["imageStream"])
        result[Annotation.IMPORT_REGISTRY_IMAGE_STREAM] = "true"
    if registry.get("secretRef"):
        result[Annotation.IMPORT_SECRET] = str(registry["secretRef"])
    if registry.get("certConfigMap"):
        result[Annotation.IMPORT_CERT_CONFIG_MAP] = str(registry["certConfigMap"])
    architecture = (registry.get("platform") or {}).get("architecture")
    if architecture:
        result[cdi.IMPORT_REGISTRY_IMAGE_ARCHITECTURE] = str(architecture)
    return result


def preallocation(dv: Mapping[str, Any], caches: Caches) -> bool:
    """The DataVolume's ``spec.preallocation``, else CDIConfig's."""
    value = (dv.get("spec") or {}).get("preallocation")
    if isinstance(value, bool):
        return value
    return bool(caches.config_status().get("preallocation"))


def new_claim(dv: Mapping[str, Any], claim_spec: Mapping[str, Any], caches: Caches) -> JSON:
    """The claim CDI creates for ``dv``: same name and namespace, owned by it, with its labels and
    annotations, the worker's bookkeeping annotations and the import source's."""
    labels = {Label.APP: Label.APP_VALUE}
    if meta.volume_mode(claim_spec) == meta.FILESYSTEM:
        labels[Label.FILLING_UP_ALERT] = cdi.FILLING_UP_ALERT_DISABLED
    labels.update(meta.labels_of(dv))
    labels.update(recommended_labels())
    annotations = meta.annotations_of(dv)
    annotations[Annotation.POD_RESTARTS] = "0"
    annotations[Annotation.CONTENT_TYPE] = content_type(dv)
    priority_class = (dv.get("spec") or {}).get("priorityClassName")
    if priority_class:
        annotations[Annotation.POD_PRIORITY_CLASS] = str(priority_class)
    annotations[Annotation.PREALLOCATION_REQUESTED] = "true" if preallocation(dv, caches) else "false"
    annotations[Annotation.CREATED_FOR_DATA_VOLUME] = meta.uid(dv)
    annotations.update(source_annotations(dv))
    for delayed in DELAYED_ANNOTATIONS:
        annotations.pop(delayed, None)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": meta.name(dv),
            "namespace": meta.namespace(dv),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [meta.owner_reference(dv, cdi.API_VERSION, "DataVolume")],
        },
        "spec": copy.deepcopy(dict(claim_spec)),
    }


def recommended_labels() -> dict[str, str]:
    """The labels CDI's controller puts on what it creates (SetRecommendedLabels)."""
    return {cdi.MANAGED_BY_LABEL: cdi.CONTROLLER_NAME, cdi.COMPONENT_LABEL: "storage"}
