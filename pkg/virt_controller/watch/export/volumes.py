"""What every export source yields: the claims to serve and whether they can be served now, plus the
facts about a claim the controller acts on (populated by CDI, in use by a pod, holding a disk image)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubevirt.client import KubeApi, NotFoundError
from kubevirt.client.resources import DATA_VOLUMES
from kubevirt.controller import Store
from kubevirt.controller.store import NAMESPACE_INDEX
from kubevirt.virt_controller.watch.common import controller_ref_of_dict
from kubevirt.virt_controller.watch.snapshot.restore_spec import CONTENT_TYPE_ANNOTATION
from kubevirt_api.view import JSON

DATA_VOLUME_API_VERSION: Final = f"{DATA_VOLUMES.group}/{DATA_VOLUMES.version}"
# CDI's content types that hold a disk image ("" is CDI's default, kubevirt).
_KUBEVIRT_CONTENT: Final = ("kubevirt", "")

# A DataVolume by namespace and name; None when it does not exist.
DataVolumeLookup = Callable[[str, str], JSON | None]


class SourceError(Exception):
    """A source's objects cannot be read or made; the pass fails and is retried."""


@dataclass(frozen=True)
class SourceVolumes:
    """The claims of a source; ``message`` says why they cannot be served now, when they cannot."""

    volumes: list[JSON] = field(default_factory=list)
    in_use: bool = False
    populated: bool = False
    message: str = ""

    @property
    def available(self) -> bool:
        return not self.in_use and self.populated


class ApiDataVolumes:
    """DataVolumes read when a claim is controlled by one (CDI may not be installed: none then exist)."""

    def __init__(self, api: KubeApi) -> None:
        self._api = api

    def __call__(self, namespace: str, name: str) -> JSON | None:
        try:
            return self._api.get(DATA_VOLUMES, namespace, name)
        except NotFoundError:
            return None


def _meta(obj: Mapping[str, Any]) -> JSON:
    return obj.get("metadata") or {}


def is_block(pvc: Mapping[str, Any]) -> bool:
    return (pvc.get("spec") or {}).get("volumeMode") == "Block"


def _owning_data_volume(pvc: Mapping[str, Any]) -> str | None:
    owner = controller_ref_of_dict(pvc)
    if owner is None or owner.get("kind") != "DataVolume":
        return None
    return str(owner.get("name"))


def is_populated(pvc: Mapping[str, Any], data_volumes: DataVolumeLookup) -> bool:
    """CDI's ``IsPopulated``: a claim of a DataVolume is populated once the DataVolume succeeded."""
    name = _owning_data_volume(pvc)
    if name is None:
        return True
    namespace = str(_meta(pvc).get("namespace") or "")
    dv = data_volumes(namespace, name)
    if dv is None:
        raise SourceError(f"datavolume {namespace}/{name} not found")
    return (dv.get("status") or {}).get("phase") == "Succeeded"


def is_kubevirt_content(pvc: Mapping[str, Any], data_volumes: DataVolumeLookup) -> bool:
    """Whether the claim holds a disk image (served raw) rather than files (served as a directory)."""
    if is_block(pvc):
        return True
    annotations = _meta(pvc).get("annotations") or {}
    if CONTENT_TYPE_ANNOTATION in annotations and annotations[CONTENT_TYPE_ANNOTATION] in _KUBEVIRT_CONTENT:
        return True
    owner = controller_ref_of_dict(pvc)
    if (
        owner is None
        or owner.get("kind") != "DataVolume"
        or owner.get("apiVersion") != DATA_VOLUME_API_VERSION
    ):
        return False
    dv = data_volumes(str(_meta(pvc).get("namespace") or ""), str(owner.get("name")))
    return dv is not None and ((dv.get("spec") or {}).get("contentType") or "") in _KUBEVIRT_CONTENT


def pods_using(pods: Store[JSON], namespace: str, claims: Iterable[str]) -> list[JSON]:
    """The pods of the namespace, other than succeeded ones, that mount one of the claims."""
    wanted = set(claims)
    if not wanted:
        return []
    found: list[JSON] = []
    for pod in pods.by_index(NAMESPACE_INDEX, namespace):
        if (pod.get("status") or {}).get("phase") == "Succeeded":
            continue
        volumes = (pod.get("spec") or {}).get("volumes") or ()
        # One entry per mounting volume, as KubeVirt lists them.
        found.extend(
            pod
            for volume in volumes
            if (volume.get("persistentVolumeClaim") or {}).get("claimName") in wanted
        )
    return found


def controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    ref = controller_ref_of_dict(obj)
    return ref is not None and ref.get("uid") == _meta(owner).get("uid")
